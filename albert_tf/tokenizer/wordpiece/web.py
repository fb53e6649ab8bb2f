"""The tables the WordPiece web tokenizer (`web_tokenizer.js`) reads: BERT's
character properties (whitespace, control, punctuation, CJK, case) as ranges,
and what lowercasing and accent stripping emit for each character."""

from albert_tf.tokenizer.web import deltas, special_ids
from albert_tf.tokenizer.wordpiece import chars


def tables(tokenizer):
    """The JSON-ready tables of a host `HostWordPieceTokenizer`."""
    starts, values = chars.property_ranges()
    emissions = chars.emission_table() if tokenizer.lowercase else {}
    keys = sorted(emissions)
    return {
        "type": "wordpiece",
        "lowercase": bool(tokenizer.lowercase),
        "properties": {"starts": deltas(starts), "values": list(values)},
        "emission": {"keys": deltas([ord(k) for k in keys]),
                     "values": "\0".join(emissions[k] for k in keys)},
        "special": special_ids(tokenizer),
    }
