"""Sentences and chapter headings in plain prose (e.g. Project Gutenberg books).

The splitter is a small set of rules, not a trained model: a sentence ends at
".", "!", "?" (or a run of them, "..." included), optionally followed by
closing quotes, brackets or the "_" of Gutenberg italics, then whitespace,
then a capital letter or digit, possibly behind opening quotes or brackets.
A lowercase continuation (`"Oh!" said she.`) never splits. A period does not
end a sentence after a title that precedes a name ("Mr.", "Mrs.", "Dr.",
"St.", ...) or after a single capital letter (an initial, as in "J. R. R.
Tolkien"), except the pronoun "I".

Its errors are the classic ones of such rules, kept on purpose because the
alternatives are worse for pretraining data: "in Baker St. Then" does not
split, "at 8 P. M. He" does not split, and "No. 7" is not special-cased
("No. There was..." is far more common in fiction).
"""

import re

# Titles written before a name: the period after them never ends a sentence
# in the books this is meant for (counted in ../shared/data/corpus/gutenberg:
# "Mr. D" 342 times, "St. S" 41, ...). Case-sensitive on purpose: "st." or
# "dr." in lowercase are rare and ambiguous.
TITLES = frozenset({
    "Mr", "Mrs", "Ms", "Messrs", "Mme", "Mlle", "Dr", "St", "Prof", "Rev", "Capt", "Col",
    "Gen", "Lt", "Sgt", "Hon", "Gov", "Sen", "Rep", "Jr", "Sr",
})

_CLOSERS = "\"'\u201d\u2019)\\]_"  # quotes, brackets and italics that may follow the stop
_OPENERS = "\"'\u201c\u2018(\\[_"
# A candidate boundary: the stop, its closers, the whitespace, then a look at
# what starts the next sentence. Group "stop" is the punctuation run.
_BOUNDARY = re.compile(
    r"(?P<stop>[.!?]+)[" + _CLOSERS + r"]*(?P<space>\s+)(?=[" + _OPENERS + r"]*[A-Z0-9])")
# The word just before a period: letters, possibly with inner periods (U.S.A).
_LAST_WORD = re.compile(r"([A-Za-z][A-Za-z.]*)$")

# Chapter-like headings: a keyword and a number (arabic, roman or spelled),
# then anything ("CHAPTER II. The Pool of Tears", "Chapter 3", "ADVENTURE IV.
# THE BOSCOMBE VALLEY MYSTERY", "Letter 1"), or a bare roman numeral with an
# optional title ("II", "IV. The Preparation").
_HEADING_KEYWORD = re.compile(
    r"(?i)(chapter|book|part|volume|letter|stave|adventure|section|canto)\s+"
    r"([ivxlcdm]+|\d+|one|two|three|four|five|six|seven|eight|nine|ten|the\s+\w+)\b")
_HEADING_NUMERAL = re.compile(r"[IVXLCDM]+(\.(\s+\S.*)?)?")
MAX_HEADING_LENGTH = 80


def _period_is_abbreviation(text_before):
    """True if a period after `text_before` belongs to a title or an initial."""
    match = _LAST_WORD.search(text_before)
    if not match:
        return False
    word = match.group(1)
    last = word.rsplit(".", 1)[-1]  # "U.S.A" -> "A"
    if word in TITLES:
        return True
    # A single capital letter is an initial ("J. Smith", "U.S.A. Today"),
    # except the pronoun "I", which ends sentences ("It was not I.") far more
    # often than it abbreviates a name.
    return len(last) == 1 and last.isupper() and word != "I"


def split_sentences(text):
    """Splits one paragraph of prose into sentences.

    Args:
        text: a paragraph; line breaks and runs of spaces are treated as one
            space (hard-wrapped lines are joined first).

    Returns:
        `list[str]`: the sentences, stripped, in order, none empty. Their
        concatenation (joined by single spaces) is the whitespace-collapsed
        paragraph.
    """
    text = " ".join(text.split())
    sentences, start = [], 0
    for match in _BOUNDARY.finditer(text):
        stop = match.group("stop")
        if stop == "." and _period_is_abbreviation(text[start:match.start("stop")]):
            continue
        sentences.append(text[start:match.start("space")])
        start = match.end("space")
    sentences.append(text[start:])
    return [s for s in sentences if s]


def is_heading(line):
    """True if `line` (one whole paragraph) looks like a chapter heading.

    Only a paragraph of one short line is a candidate: "BOOK I. (FOLIO),
    CHAPTER I. (SPERM WHALE).--This whale..." opens a paragraph of Moby-Dick
    and is prose, not a heading.
    """
    line = line.strip()
    if not line or len(line) > MAX_HEADING_LENGTH or "\n" in line:
        return False
    return bool(_HEADING_KEYWORD.match(line) or _HEADING_NUMERAL.fullmatch(line))
