"""Token classification files: CoNLL columns and JSON lines with character-span entities.

- CoNLL (any extension but .json/.jsonl): a token per line, columns split on
  whitespace, the tag in the last column; blank lines between sentences;
  `-DOCSTART-` lines skipped. Every token line of a file has the number of
  columns of its first one. A file to predict may have the tokens only.
- JSON lines (.json, .jsonl; CLUENER2020's format): `{"text": ...,
  "label": {TYPE: {ENTITY: [[start, end], ...]}}}`, `end` inclusive, and
  `text[start:end + 1] == ENTITY`; `label` may be absent (nothing tagged,
  or a file to predict). Overlapping entities keep the one that starts
  first (the longer at a tie); the others are dropped and counted.

An empty file is an error (naming it) for training and evaluation; an empty
sentence cannot occur in CoNLL, and an empty JSON text is an example with no
words (nothing to tag, no entities).
"""

import dataclasses
import logging
import os

from albert_tf.io_utils import numbered_lines
from albert_tf.tasks.token_classification import tagging
from albert_tf.tasks.user_files import read_rows

log = logging.getLogger(__name__)

JSON_EXTENSIONS = (".json", ".jsonl", ".ndjson")


@dataclasses.dataclass(frozen=True)
class TaggedExample:
    """One sentence or text to tag.

    text: the text the model reads (CoNLL tokens joined by single spaces).
    words: CoNLL: each token's character span `(start, end)` in `text`;
        None for JSON lines (the words are found from the tokenizer's
        tokens, `albert_tf.steps.words.graph_word_starts`).
    tags: CoNLL: each token's tag (None if the file has no tags).
    entities: JSON lines: `tagging.Entity`s with character spans, end exclusive.
    where: `file:line` of the example's first line.
    """

    guid: str
    text: str
    where: str
    words: tuple | None = None
    tags: tuple | None = None
    entities: tuple | None = None


def is_json(path, fmt="auto"):
    if fmt not in ("auto", "jsonl"):
        raise ValueError(f"--format={fmt}: token classification reads CoNLL files (by "
                         "extension: any but .json/.jsonl) or JSON lines (--format=jsonl)")
    return fmt == "jsonl" or os.path.splitext(path)[1].lower() in JSON_EXTENSIONS


def read_file(path, fmt="auto", labelled=True):
    """The `TaggedExample`s of a CoNLL or JSON-lines file."""
    examples = list(read_json(path) if is_json(path, fmt) else read_conll(path, labelled))
    if not examples and labelled:
        raise ValueError(f"{path}: no sentences (the file is empty)")
    return examples


def _sentence(path, number, tokens, tags):
    words, start = [], 0
    for token in tokens:
        words.append((start, start + len(token)))
        start += len(token) + 1
    return TaggedExample(f"{os.path.basename(path)}:{number}", " ".join(tokens),
                         f"{path}:{number}", tuple(words), tuple(tags) if tags else None)


def read_conll(path, labelled=True):
    """Yields the sentences of a CoNLL file; a `ValueError` names a line with
    another number of columns than the first, or a tag that is not one."""
    columns, tokens, tags, first = None, [], [], None
    for number, line in numbered_lines(path):
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":
            if tokens:
                yield _sentence(path, first, tokens, tags)
            tokens, tags = [], []
            continue
        if columns is None:
            columns = len(fields)
            if labelled and columns < 2:
                raise ValueError(f"{path}:{number}: one column; a labelled CoNLL file "
                                 "has the token first and the tag in the last column")
        if len(fields) != columns:
            raise ValueError(f"{path}:{number}: {len(fields)} columns, expected "
                             f"{columns} (as on the file's first token line)")
        if not tokens:
            first = number
        tokens.append(fields[0])
        if columns > 1:
            try:
                tagging.split_tag(fields[-1])
            except ValueError as e:
                raise ValueError(f"{path}:{number}: {e}") from None
            tags.append(fields[-1])
    if tokens:
        yield _sentence(path, first, tokens, tags)


def _entities_of(row, text):
    """The row's entities as character spans, end exclusive (unsorted)."""
    label = row.values.get("label") or {}
    if not isinstance(label, dict):
        raise ValueError(f"{row.where}: 'label' must map types to entities, got "
                         f"{type(label).__name__}")
    found = []
    for kind, mentions in label.items():
        if not isinstance(mentions, dict):
            raise ValueError(f"{row.where}: label {kind!r} must map entity texts to spans")
        for mention, spans in mentions.items():
            for span in spans:
                if (not isinstance(span, list) or len(span) != 2
                        or not all(isinstance(v, int) for v in span)):
                    raise ValueError(f"{row.where}: {kind} {mention!r}: a span is "
                                     f"[start, end], got {span!r}")
                start, end = span
                if not 0 <= start <= end < len(text) or text[start:end + 1] != mention:
                    raise ValueError(f"{row.where}: {kind} {mention!r} at [{start}, {end}] "
                                     f"(end inclusive): the text there is "
                                     f"{text[start:end + 1]!r}")
                found.append(tagging.Entity(kind, start, end + 1))
    return found


def _without_overlaps(found):
    kept, dropped = [], 0
    for entity in sorted(found, key=lambda e: (e.start, -e.end, e.type)):
        if kept and entity.start < kept[-1].end:
            dropped += 1
        else:
            kept.append(entity)
    return kept, dropped


def read_json(path):
    """Yields the texts of a CLUENER2020-style JSON-lines file."""
    dropped, first = 0, None
    for row in read_rows(path, "jsonl"):
        text = row.values.get("text")
        if not isinstance(text, str):
            raise ValueError(f"{row.where}: no 'text' string; the row has "
                             f"{', '.join(map(repr, row.values))}")
        kept, lost = _without_overlaps(_entities_of(row, text))
        if lost and first is None:
            first = row.where
        dropped += lost
        guid = str(row.values.get("id", f"{os.path.basename(path)}:{row.line}"))
        yield TaggedExample(guid, text, row.where, entities=tuple(kept))
    if dropped:
        log.warning("%s: %d overlapping entities dropped (the first at %s): a tag "
                        "sequence holds one entity per word", path, dropped, first)
