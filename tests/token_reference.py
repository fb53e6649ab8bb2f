"""The host forms of token classification's word rule and entity reading, kept
only to check the graph's (`albert_tf.export.token_classification`) against them.

`word_starts` writes the module docstring's word rule token by token in
plain Python; `char_entities` reads entities from word tags with
`tasks.tagging` (conlleval's rules, seqeval-checked) and slices their text.
"""

import unicodedata

from albert_tf.steps.words import ASCII_PUNCTUATION, CJK_RANGES
from albert_tf.tasks.token_classification import tagging


def is_standalone(char):
    """Whether `char` is a word by itself: a CJK ideograph or punctuation."""
    code = ord(char)
    if any(lo <= code <= hi for lo, hi in CJK_RANGES + ASCII_PUNCTUATION):
        return True
    return unicodedata.category(char).startswith("P")


def word_starts(text, starts, ends):
    """For each token (code point spans `starts`, `ends` into `text`), whether it begins a word."""
    out = []
    for i, (start, end) in enumerate(zip(starts, ends)):
        if i == 0:
            out.append(True)
        elif starts[i - 1] == ends[i - 1]:
            out.append(False)  # after a token of no characters (a lone "▁"): one word
        elif start > ends[i - 1]:
            out.append(True)
        elif start < ends[i - 1]:
            out.append(False)  # overlapping spans: made from the same characters
        else:
            before = ends[i - 1] - 1
            out.append((start < len(text) and is_standalone(text[start]))
                       or (0 <= before < len(text) and is_standalone(text[before])))
    return out


def char_entities(word_tag_list, spans, text):
    """Entities of one text's word tags as `{"type", "start", "end", "text"}`
    (code points, end exclusive)."""
    found = []
    for e in tagging.entities_default(word_tag_list):
        start, end = spans[e.start][0], spans[e.end - 1][1]
        found.append({"type": e.type, "start": start, "end": end, "text": text[start:end]})
    return found
