"""ALBERT's text normalization, whole-string and one character at a time.

`preprocess_text` is the reference (google-research/albert
`tokenization.py`): collapse whitespace, `` and '' to ", NFKD, drop combining
characters, lowercase. (The quote step is XLNet's `preprocess_text`, which
Hugging Face's `AlbertTokenizer` also applies; google-research/albert's own
function, as of commit 4135001, skips it. It changes nothing but "``" and "''",
which the reference paragraphs do not contain.) It loses the link between
output and input characters, which question answering needs, so this module
also computes the same output as one *emission* per input character
(`aligned_emissions`): the string that character contributes, possibly
empty. Joined, the emissions equal `preprocess_text(text)` exactly (tested
on the reference paragraphs and on random Unicode), because:

- NFKD is the concatenation of each character's full decomposition followed by
  a stable reordering of runs of combining characters (canonical combining
  class != 0). The reference drops exactly those characters, so what remains
  does not depend on the reordering: decomposing and dropping per character
  gives the same string.
- `str.lower` maps one character at a time, except capital sigma, which
  becomes final sigma depending on its neighbours (Unicode's Final_Sigma
  context). That context is computed here from each emission's first and last
  cased / case-ignorable character (`CASED`, `OTHER`, `TRANSPARENT`).
- Whitespace collapsing and the quote replacements depend on runs of equal
  characters, handled explicitly.

The tables come from the running Python's `unicodedata` and `str.lower`,
the functions the reference calls, so host and in-graph paths agree with the
reference on this Python's Unicode version.
"""

import bisect
import dataclasses
import functools
import re
import unicodedata

MAX_CODE_POINT = 0x110000
SURROGATES = range(0xD800, 0xE000)
HANGUL_SYLLABLES = range(0xAC00, 0xD7A4)  # decomposed algorithmically by NFKD
CAPITAL_SIGMA, FINAL_SIGMA = "\u03a3", "\u03c2"
_QUOTE_RUNS = re.compile("``+|''+")

# Classes of a character for the Final_Sigma context (Unicode 3.13, D135):
# case-ignorable characters are skipped, then the first other one decides.
TRANSPARENT, CASED, OTHER = 0, 1, 2


def preprocess_text(text, lowercase):
    """ALBERT's `preprocess_text`, whole string (the reference semantics).

    Args:
        text: a `str`.
        lowercase: apply `str.lower` last (uncased models).

    Returns:
        The normalized `str` that SentencePiece encodes.
    """
    text = " ".join(text.strip().split())
    text = text.replace("``", '"').replace("''", '"')
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    return text.lower() if lowercase else text


@functools.lru_cache(maxsize=None)
def _drop_combining_table():
    """A `str.translate` table deleting every character of non-zero combining class."""
    return {cp: None for cp in range(MAX_CODE_POINT)
            if cp not in SURROGATES and unicodedata.combining(chr(cp))}


def preprocess_text_fast(text, lowercase):
    """`preprocess_text`, same output (tested), with C-speed steps for the host path.

    `split()` already ignores the ends, ASCII text is its own NFKD, and
    `str.translate` drops the combining characters instead of a Python loop.
    """
    text = " ".join(text.split())
    if "``" in text or "''" in text:
        text = text.replace("``", '"').replace("''", '"')
    if not text.isascii():
        text = unicodedata.normalize("NFKD", text)
        if not text.isascii():
            text = text.translate(_drop_combining_table())
    return text.lower() if lowercase else text


def to_text(value):
    """`str` from `str` or UTF-8 `bytes`, as the in-graph path decodes it.

    Invalid UTF-8 is replaced by U+FFFD, one per maximal invalid subsequence
    (Python's and TensorFlow's `errors="replace"` agree; tested). Lone
    surrogates in a `str` (which have no UTF-8 encoding) also become U+FFFD.
    """
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    if not isinstance(value, str):
        raise TypeError(f"expected str or bytes, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = "".join("\ufffd" if ord(c) in SURROGATES else c for c in value)
    return value


def _decompose(char):
    """NFKD of one character without its combining characters."""
    return "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))


@functools.lru_cache(maxsize=None)
def whitespace_code_points():
    """Sorted code points that `str.split()` and `str.strip()` treat as whitespace."""
    return tuple(cp for cp in range(MAX_CODE_POINT) if chr(cp).isspace())


@functools.lru_cache(maxsize=None)
def case_class_ranges():
    """`(starts, classes)`: code points `[starts[k], starts[k+1])` have `classes[k]`.

    Derived by asking `str.lower` itself (the function the reference calls)
    rather than from a copy of the Unicode property files: a final sigma after
    `c` means `c` is cased and not case-ignorable; a final sigma after "A" + `c`
    without the first means `c` is case-ignorable.
    """
    starts, classes = [], []
    for cp in range(MAX_CODE_POINT):
        if cp in SURROGATES:
            cls = OTHER
        else:
            c = chr(cp)
            if (c + CAPITAL_SIGMA).lower()[-1] == FINAL_SIGMA:
                cls = CASED
            elif ("A" + c + CAPITAL_SIGMA).lower()[-1] == FINAL_SIGMA:
                cls = TRANSPARENT
            else:
                cls = OTHER
        if not classes or classes[-1] != cls:
            starts.append(cp)
            classes.append(cls)
    return tuple(starts), tuple(classes)


def case_class(cp):
    starts, classes = case_class_ranges()
    return classes[bisect.bisect_right(starts, cp) - 1]


def edge_case_classes(text):
    """`(left, right)`: class of the first / last non-transparent character."""
    found = [cls for cls in (case_class(ord(c)) for c in text) if cls != TRANSPARENT]
    return (found[0], found[-1]) if found else (TRANSPARENT, TRANSPARENT)


@dataclasses.dataclass(frozen=True)
class MappingTable:
    """Characters whose emission is not themselves (whitespace excluded).

    `keys` are sorted code points; `emissions[k]` is what `keys[k]` becomes;
    `left`/`right` are the edge case classes of its emission before
    lowercasing and `sigma[k]` says that emission is a capital sigma (both
    only filled for lowercasing tables).
    """

    keys: tuple
    emissions: tuple
    left: tuple
    right: tuple
    sigma: tuple


@functools.lru_cache(maxsize=None)
def mapping_table(lowercase):
    """The `MappingTable` for uncased (`lowercase=True`) or cased models."""
    spaces = set(whitespace_code_points())
    rows = []
    for cp in range(MAX_CODE_POINT):
        if cp in SURROGATES or cp in spaces:
            continue
        c = chr(cp)
        # Most characters have no decomposition and map to themselves: skip
        # them cheaply (Hangul syllables decompose but report no mapping).
        if (not unicodedata.combining(c) and not unicodedata.decomposition(c)
                and cp not in HANGUL_SYLLABLES and (not lowercase or c.lower() == c)):
            continue
        decomposed = _decompose(c)
        emission = decomposed.lower() if lowercase else decomposed
        if emission == c:
            continue
        left, right = edge_case_classes(decomposed) if lowercase else (0, 0)
        rows.append((cp, emission, left, right, lowercase and decomposed == CAPITAL_SIGMA))
    return MappingTable(*(tuple(column) for column in zip(*rows)))


@functools.lru_cache(maxsize=None)
def _mapping_dict(lowercase):
    table = mapping_table(lowercase)
    return {chr(k): (e, l, r, s) for k, e, l, r, s in zip(
        table.keys, table.emissions, table.left, table.right, table.sigma)}


@functools.lru_cache(maxsize=None)
def _whitespace_set():
    return frozenset(chr(cp) for cp in whitespace_code_points())


def aligned_emissions(text, lowercase):
    """What each character of `text` becomes under `preprocess_text`.

    Args:
        text: a `str` of `n` characters.
        lowercase: as in `preprocess_text`.

    Returns:
        A list of `n` strings (some empty) whose concatenation is
        `preprocess_text(text, lowercase)`. A whitespace run becomes " " on its
        first character and "" on the others (all "" at either end); a pair
        "``" or "''" becomes '"' on its first character and "" on the second.
    """
    mapping = _mapping_dict(lowercase)
    spaces = _whitespace_set()
    solid = [i for i, c in enumerate(text) if c not in spaces]
    first, last = (solid[0], solid[-1]) if solid else (len(text), -1)
    out = []
    for i, c in enumerate(text):
        if c in spaces:
            out.append(" " if first < i < last and text[i - 1] not in spaces else "")
        else:
            hit = mapping.get(c)
            out.append(hit[0] if hit else c)
    _replace_quote_pairs(text, out)
    if lowercase:
        _apply_final_sigma(text, out, mapping, spaces)
    return out


def _replace_quote_pairs(text, out):
    """`str.replace` pairs left to right: in a run of k quotes, pairs (0,1), (2,3), ..."""
    for run in _QUOTE_RUNS.finditer(text):
        start, stop = run.span()
        for k in range(start, start + 2 * ((stop - start) // 2), 2):
            out[k], out[k + 1] = '"', ""


def _edge_classes(text, out, mapping, spaces, i):
    """(left, right) case classes of character `i`'s emission before lowercasing."""
    c = text[i]
    if c in spaces or (c in "`'" and out[i] != c):
        cls = OTHER if out[i] else TRANSPARENT  # " " and '"' are neither cased nor ignorable
        return cls, cls
    if c in mapping:
        return mapping[c][1], mapping[c][2]
    cls = case_class(ord(c))
    return cls, cls


def _apply_final_sigma(text, out, mapping, spaces):
    """Python's `str.lower` Final_Sigma rule, evaluated across emissions."""
    def left(j):
        return _edge_classes(text, out, mapping, spaces, j)[0]

    def right(j):
        return _edge_classes(text, out, mapping, spaces, j)[1]

    for i, c in enumerate(text):
        if c in mapping and mapping[c][3] and final_sigma(i, len(text), left, right):
            out[i] = FINAL_SIGMA


def final_sigma(i, n, left, right):
    """Whether the capital sigma at position `i` of `n` becomes final sigma under
    Python's `str.lower` (Unicode 3.13, Final_Sigma): a cased character before
    it and none after, skipping case-ignorable ones. `left(j)`, `right(j)`: the
    case classes (`CASED`, `TRANSPARENT` for case-ignorable, `OTHER`) of the
    first and last character position `j` contributes. The graph form is
    `graph_text.final_sigma`."""
    j = i - 1
    while j >= 0 and right(j) == TRANSPARENT:
        j -= 1
    k = i + 1
    while k < n and left(k) == TRANSPARENT:
        k += 1
    return j >= 0 and right(j) == CASED and not (k < n and left(k) == CASED)


def next_true(flags, strict):
    """For each i, the first j > i (strict) or j >= i with flags[j]; len(flags) if none
    (the host form of `graph_text.next_true`, on one text)."""
    out, following = [0] * len(flags), len(flags)
    for i in range(len(flags) - 1, -1, -1):
        if strict:
            out[i] = following
        if flags[i]:
            following = i
        if not strict:
            out[i] = following
    return out
