"""What every vocabulary type's web tokenizer shares (the web export's bundle).

A vocabulary type gives the browser its tokenizer as a JavaScript module
(`VocabularyType.web_tokenizer`, `tokenizer.js` in the bundle, exporting
`load(tables, vocabularyBytes)`) and the tables it reads (`web_tables`):
computed from the Python tables the host tokenizer uses, so that the browser
never calls its own Unicode functions (whose Unicode version may differ).
`TEXT_SCRIPT` is what those modules share (`tokenizer_text.js` in the bundle).
"""

import pathlib

TEXT_SCRIPT = pathlib.Path(__file__).with_name("web_text.js")


def deltas(values):
    """Sorted integers as their first value then differences (a compact JSON list)."""
    out, last = [], 0
    for value in values:
        out.append(value - last)
        last = value
    return out


def special_ids(tokenizer):
    """`{"pad", "unk", "cls", "sep", "mask"}` -> the tokenizer's ids, for the bundle."""
    return {name: int(getattr(tokenizer, f"{name}_id"))
            for name in ("pad", "unk", "cls", "sep", "mask")}
