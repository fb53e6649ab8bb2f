"""The tables the SentencePiece web tokenizer (`web_tokenizer.js`) reads: ALBERT's
preprocessing (lowercasing, NFKD without accents, quotes, whitespace) as a
code point mapping, the case classes of Python's Final_Sigma rule, and the
digit-comma rule's replacements."""

from albert_tf.tokenizer import normalization
from albert_tf.tokenizer.web import deltas, special_ids


def tables(tokenizer):
    """The JSON-ready tables of a host `HostTokenizer`."""
    table = normalization.mapping_table(tokenizer.lowercase)
    case_starts, case_classes = normalization.case_class_ranges()
    rules = tokenizer.vocab.digit_comma_replacements()
    return {
        "type": "sentencepiece",
        "lowercase": bool(tokenizer.lowercase),
        "whitespace": deltas(normalization.whitespace_code_points()),
        "mapping": {
            "keys": deltas(table.keys),
            # No emission holds U+0000 (it maps to itself), so it separates them.
            "emissions": "\0".join(table.emissions),
            "edges": "".join(str(l * 3 + r) for l, r in zip(table.left, table.right)),
            "sigma": [k for k, s in zip(table.keys, table.sigma) if s],
        },
        "case": {"starts": deltas(case_starts), "classes": "".join(map(str, case_classes))},
        "digit_comma": {str(index): rule for index, rule in rules.items()},
        "special": special_ids(tokenizer),
    }
