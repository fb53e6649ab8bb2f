"""Documents of sentences from raw text files, read as a stream.

Two input formats:

- `lines`: the format of google-research/albert `create_pretraining_data.py`
  (and BERT's): one sentence per line, a blank line between documents.
- `prose`: plain text such as a Project Gutenberg book: any line ends (CRLF
  included), hard-wrapped lines, paragraphs separated by blank lines. Each
  paragraph is split into sentences by `sentences.split_sentences`. A
  document ends at the end of a file and at every chapter heading
  (`sentences.is_heading`; the heading itself is dropped): a chapter is the
  natural unit for sentence-order pairs, and it keeps documents small enough
  that a window of them fits in memory. Project Gutenberg's licence header
  and footer are skipped when their "*** START OF" / "*** END OF" lines are
  present.

In both formats every file ends the current document, so no pair of segments
ever spans two files. Documents are yielded one at a time; only the current
one is held in memory.
"""

import itertools
import os
import re

import numpy as np

from albert_tf.io_utils import expand_inputs, numbered_lines  # noqa: F401 (part of this API)
from albert_tf.pretraining.masking import WORD_MARK
from albert_tf.pretraining.sentences import is_heading, split_sentences

INPUT_FORMATS = ("lines", "prose")
_GUTENBERG_START = re.compile(r"\*\*\* ?START OF (THE|THIS) PROJECT GUTENBERG", re.I)
_GUTENBERG_END = re.compile(r"\*\*\* ?END OF (THE|THIS) PROJECT GUTENBERG", re.I)
# The licence header is a few dozen lines; a START line further in is text.
_HEADER_LINES = 400


def _numbered_lines(path):
    """`(line_number, line)` of a UTF-8 text file, without line ends."""
    for number, line in numbered_lines(path):
        yield number, line.rstrip("\r\n")


def _without_gutenberg_licence(lines):
    """`lines` between Gutenberg's START and END markers (all of them if none)."""
    head = list(itertools.islice(lines, _HEADER_LINES))
    starts = [i for i, (_, line) in enumerate(head) if _GUTENBERG_START.search(line)]
    body = itertools.chain(head[starts[0] + 1:] if starts else head, lines)
    for number, line in body:
        if _GUTENBERG_END.search(line):
            return
        yield number, line


def _line_documents(path):
    document = []
    for _, line in _numbered_lines(path):
        if line.strip():
            document.append(line.strip())
        elif document:
            yield document
            document = []
    if document:
        yield document


def _paragraphs(lines):
    """Blocks of non-blank lines, each as a list of stripped lines."""
    block = []
    for _, line in lines:
        if line.strip():
            block.append(line.strip())
        elif block:
            yield block
            block = []
    if block:
        yield block


def _prose_documents(path):
    document = []
    for block in _paragraphs(_without_gutenberg_licence(_numbered_lines(path))):
        if len(block) == 1 and is_heading(block[0]):
            if document:
                yield document
            document = []
            continue
        document += split_sentences(" ".join(block))
    if document:
        yield document


def read_documents(paths, input_format):
    """Yields each document of `paths` as a `list[str]` of sentences.

    Args:
        paths: text files (UTF-8), read in order, each once.
        input_format: "lines" or "prose" (see the module docstring).

    Raises:
        ValueError: an unknown format, or a file that is not UTF-8 (naming
            the file and line).
    """
    if input_format not in INPUT_FORMATS:
        raise ValueError(f"input_format must be one of {INPUT_FORMATS}, got {input_format!r}")
    reader = _line_documents if input_format == "lines" else _prose_documents
    for path in paths:
        yield from reader(path)


def count_documents(paths, input_format):
    """How many documents `read_documents` yields (a quick pass without
    tokenizing, a second or so per 5 MB: the total behind a progress ETA,
    and every file's encoding checked before the long work)."""
    return sum(1 for _ in read_documents(paths, input_format))


class TokenizedDocument:
    """One document's token ids, flat, with the sentence boundaries.

    Holding a document as one int32 array (not a list of lists) keeps the
    window of documents small and makes every segment a slice.

    Attributes:
        tokens: int32 `(num_tokens,)`, the sentences' ids back to back.
        ends: int64 `(num_sentences,)`, the end offset of each sentence in
            `tokens`, strictly increasing (sentences without tokens are dropped).
    """

    __slots__ = ("tokens", "ends")

    def __init__(self, tokens, ends):
        self.tokens = tokens
        self.ends = ends

    @property
    def starts(self):
        return np.concatenate([[0], self.ends[:-1]]).astype(np.int64)

    def __len__(self):
        return len(self.ends)


def tokenize_document(tokenizer, sentences, word_marks=None):
    """A `TokenizedDocument` of `sentences`; None if none has a token.

    word_marks: for whole-word masking, `ids -> bool array`: which tokens of a
    sentence continue a word of the segmenter's; those ids get
    `masking.WORD_MARK` (read and removed by the masking)."""
    encoded = [ids for ids in tokenizer.encode_batch(sentences) if ids]
    if word_marks is not None:
        encoded = [np.where(word_marks(ids), np.asarray(ids) | WORD_MARK, ids)
                   for ids in encoded]
    if not encoded:
        return None
    lengths = np.fromiter((len(ids) for ids in encoded), np.int64, len(encoded))
    tokens = np.fromiter(itertools.chain.from_iterable(encoded), np.int32, int(lengths.sum()))
    return TokenizedDocument(tokens, np.cumsum(lengths))
