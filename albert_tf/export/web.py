"""The web export: a folder that tokenizes and predicts in the browser.

`tokenizer_tables(tokenizer)` is everything `web_assets/tokenizer.js` needs
to tokenize exactly as the host tokenizers do, computed from the same Python
tables they use (`normalization.mapping_table`, whitespace, case classes;
`wordpiece_chars.property_ranges`, `emission_table`), so the browser never
calls its own Unicode functions (whose Unicode version may differ).
SentencePiece itself runs in the browser as the real library compiled to
WebAssembly (`@sctg/sentencepiece-js`); the preprocessing, the digit-comma
rule and the offsets are `tokenizer.js`'s.
"""

import pathlib

from albert_tf.tokenizer import normalization, wordpiece_chars

ASSETS = pathlib.Path(__file__).with_name("web_assets")


def _deltas(values):
    """Sorted integers as their first value then differences (a compact JSON list)."""
    out, last = [], 0
    for value in values:
        out.append(value - last)
        last = value
    return out


def _spm_tables(tokenizer):
    table = normalization.mapping_table(tokenizer.lowercase)
    case_starts, case_classes = normalization.case_class_ranges()
    rules = tokenizer.vocab.digit_comma_replacements()
    return {
        "type": "sentencepiece",
        "lowercase": bool(tokenizer.lowercase),
        "whitespace": _deltas(normalization.whitespace_code_points()),
        "mapping": {
            "keys": _deltas(table.keys),
            # No emission holds U+0000 (it maps to itself), so it separates them.
            "emissions": "\0".join(table.emissions),
            "edges": "".join(str(l * 3 + r) for l, r in zip(table.left, table.right)),
            "sigma": [k for k, s in zip(table.keys, table.sigma) if s],
        },
        "case": {"starts": _deltas(case_starts), "classes": "".join(map(str, case_classes))},
        "digit_comma": {str(index): rule for index, rule in rules.items()},
        "special": _special_ids(tokenizer),
    }


def _wordpiece_tables(tokenizer):
    starts, values = wordpiece_chars.property_ranges()
    emissions = wordpiece_chars.emission_table() if tokenizer.lowercase else {}
    keys = sorted(emissions)
    return {
        "type": "wordpiece",
        "lowercase": bool(tokenizer.lowercase),
        "properties": {"starts": _deltas(starts), "values": list(values)},
        "emission": {"keys": _deltas([ord(k) for k in keys]),
                     "values": "\0".join(emissions[k] for k in keys)},
        "special": _special_ids(tokenizer),
    }


def _special_ids(tokenizer):
    return {name: int(getattr(tokenizer, f"{name}_id"))
            for name in ("pad", "unk", "cls", "sep", "mask")}


def tokenizer_tables(tokenizer):
    """The JSON-ready tables of a host tokenizer (`HostTokenizer` or `HostWordPieceTokenizer`)."""
    if tokenizer.vocabulary_type == "sentencepiece":
        return _spm_tables(tokenizer)
    if tokenizer.vocabulary_type == "wordpiece":
        return _wordpiece_tables(tokenizer)
    raise ValueError(f"no web tokenizer for vocabulary type {tokenizer.vocabulary_type!r}")
