"""BERT's `BasicTokenizer` as rules on single characters, shared by both WordPiece tokenizers.

google-research/bert (and albert) `tokenization.py` `BasicTokenizer.tokenize`:

1. `_clean_text`: drop U+0000, U+FFFD and every character of category Cc or Cf
   except tab, newline and carriage return; whitespace (those three, " " and
   category Zs) becomes " ".
2. `_tokenize_chinese_chars`: a space on both sides of every code point of
   `CJK_RANGES`.
3. Split on whitespace (`str.split`: also U+2028 and U+2029, which step 1 keeps).
4. Uncased models, per word: `str.lower()`, NFD, drop category Mn.
5. Every punctuation character (ASCII 33-47, 58-64, 91-96, 123-126, or a
   Unicode category P*) becomes a word of its own.

Every step but two maps one character at a time, so each input character gets
a *kind* (`NORMAL`, `BREAK`: a word boundary, `CJK`: a word of its own,
`DROP`: nothing) and, for uncased models, an *emission* (what step 4 makes of
it, `emission_table`). The two exceptions:

- `str.lower` turns capital sigma into final sigma by its neighbours
  (Unicode's Final_Sigma context), which the tokenizers evaluate from
  `case class`es: the nearest non-case-ignorable character on each side
  within the word, characters dropped in step 1 skipped.
- NFD reorders runs of combining characters by combining class. Step 4 drops
  category Mn, and all but 25 characters of non-zero class are Mn (Python 3.11,
  Unicode 14). Decomposing one character at a time therefore gives NFD's
  result except when two of those 25 spacing marks (U+302E, U+1D165,
  U+1D16D, ...) stand out of canonical order in one run of combining
  characters; there the tokenizers keep the text's order (a documented
  deviation from the reference; no real text we know has it).

The tables come from the running Python's `unicodedata` and `str.lower`, the
functions the reference calls.
"""

import functools
import re
import unicodedata

import numpy as np

from albert_tf.tokenizer.normalization import (MAX_CODE_POINT, OTHER, SURROGATES, TRANSPARENT,
                                               case_class_ranges)

NORMAL, BREAK, CJK, DROP = range(4)
# Bits of a `property_ranges` value: kind (2 bits), punctuation (1), case class (2).
KIND_MASK, PUNCT_BIT, CASE_SHIFT = 3, 4, 3

# `BasicTokenizer._is_chinese_char`: CJK Unified Ideographs, Extensions A-E,
# and the two Compatibility Ideographs blocks (inclusive ranges).
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
              (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
# `_is_punctuation`: all non-letter/number ASCII, whatever its category.
_ASCII_PUNCTUATION = ((33, 47), (58, 64), (91, 96), (123, 126))
HANGUL_SYLLABLES = range(0xAC00, 0xD7A4)  # decomposed algorithmically (no decomposition())
CAPITAL_SIGMA, SMALL_SIGMA, FINAL_SIGMA = 0x3A3, 0x3C3, 0x3C2


def is_cjk(cp):
    return any(low <= cp <= high for low, high in CJK_RANGES)


def is_punctuation(char):
    cp = ord(char)
    return (any(low <= cp <= high for low, high in _ASCII_PUNCTUATION)
            or unicodedata.category(char).startswith("P"))


def char_kind(char):
    """What steps 1-3 make of `char`: `NORMAL`, `BREAK`, `CJK` or `DROP`."""
    cp = ord(char)
    if char in "\t\n\r":
        return BREAK
    category = unicodedata.category(char)
    if cp in (0, 0xFFFD) or category in ("Cc", "Cf"):
        return DROP
    if category == "Zs" or char.isspace():  # str.split() also splits at U+2028, U+2029
        return BREAK
    return CJK if is_cjk(cp) else NORMAL


def _strip_accents(char):
    """`_run_strip_accents` of one character: NFD, category Mn dropped."""
    return "".join(c for c in unicodedata.normalize("NFD", char)
                   if unicodedata.category(c) != "Mn")


@functools.lru_cache(maxsize=None)
def _categories():
    """`{code point: category}` of every character but the unassigned (Cn),
    private-use (Co) and surrogate (Cs) ones, which no rule here changes."""
    category = unicodedata.category
    out = {}
    for cp in range(MAX_CODE_POINT):
        group = category(chr(cp))
        if group not in ("Cn", "Co", "Cs"):
            out[cp] = group
    return out


@functools.lru_cache(maxsize=None)
def strip_accents_table():
    """A `str.translate` table: `_strip_accents` of every character it changes."""
    table = {}
    for cp, group in _categories().items():
        char = chr(cp)
        # Only characters with a canonical decomposition (Hangul syllables have
        # theirs by algorithm) and marks can change.
        if group == "Mn" or unicodedata.decomposition(char) or cp in HANGUL_SYLLABLES:
            stripped = _strip_accents(char)
            if stripped != char:
                table[cp] = stripped
    return table


@functools.lru_cache(maxsize=None)
def emission_table():
    """`{char: emission}` of the uncased step 4, for the characters it changes.

    Only `NORMAL` and `CJK` characters are listed (the others emit nothing).
    The emission is `str.lower` then `strip_accents_table`, character by
    character, as the host applies them to whole texts.
    """
    strip = strip_accents_table()
    table = {}
    for cp in _categories():
        char = chr(cp)
        lowered = char.lower()
        if lowered == char and cp not in strip:
            continue
        emission = lowered.translate(strip)
        if emission != char and char_kind(char) not in (BREAK, DROP):
            table[char] = emission
    return table


@functools.lru_cache(maxsize=None)
def property_ranges():
    """`(starts, values)`: code points `[starts[k], starts[k+1])` have `values[k]`,
    which packs kind | punctuation bit | case class << CASE_SHIFT (for Final_Sigma)."""
    kinds = np.full(MAX_CODE_POINT, NORMAL, np.uint8)
    for low, high in CJK_RANGES:
        kinds[low:high + 1] = CJK
    punctuation = np.zeros(MAX_CODE_POINT, np.uint8)
    for low, high in _ASCII_PUNCTUATION:
        punctuation[low:high + 1] = PUNCT_BIT
    for cp, group in _categories().items():  # only categories Cc, Cf, P* and Z* matter
        if group[0] == "P":
            punctuation[cp] = PUNCT_BIT
        elif group in ("Cc", "Cf", "Zs", "Zl", "Zp"):
            kinds[cp] = char_kind(chr(cp))
    kinds[0xFFFD] = DROP  # category So
    kinds[SURROGATES.start:SURROGATES.stop] = DROP
    case_starts, case_classes = case_class_ranges()
    cases = np.repeat(np.array(case_classes, np.uint8),
                      np.diff(np.array(case_starts + (MAX_CODE_POINT,))))
    # Dropped characters are gone before `str.lower` sees the word; word
    # boundaries end its Final_Sigma context (they are spaces by then).
    cases[kinds == DROP] = TRANSPARENT
    cases[(kinds == BREAK) | (kinds == CJK)] = OTHER
    values = kinds | punctuation | cases << CASE_SHIFT
    starts = np.concatenate([[0], np.flatnonzero(np.diff(values)) + 1])
    return tuple(starts.tolist()), tuple(values[starts].tolist())


def _ranges(predicate):
    """Inclusive `(low, high)` code point ranges whose property value passes `predicate`."""
    starts, values = property_ranges()
    return [(start, end - 1) for start, end, value in
            zip(starts, starts[1:] + (MAX_CODE_POINT,), values) if predicate(value)]


def _class_of(ranges):
    return "".join(f"{re.escape(chr(low))}-{re.escape(chr(high))}" for low, high in ranges)


@functools.lru_cache(maxsize=None)
def drop_pattern():
    """The characters step 1 drops, as a regular expression."""
    return re.compile(f"[{_class_of(_ranges(lambda v: v & KIND_MASK == DROP))}]+")


@functools.lru_cache(maxsize=None)
def word_pattern():
    """Steps 2, 3 and 5 on a text without dropped characters: each match is a
    word. Runs of other characters, else one punctuation or CJK character
    (no other character emits a CJK one in step 4: tested), breaks skipped
    (`\\s` is `str.isspace`, every `BREAK` character)."""
    alone = _class_of(_ranges(lambda v: v & PUNCT_BIT) + list(CJK_RANGES))
    return re.compile(f"[^\\s{alone}]+|\\S")
