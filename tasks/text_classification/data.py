"""Reading the user's own text classification and regression files.

Each row gives a text (`--text_column`), optionally a second text
(`--text_pair_column`) and a label (`--label_column`):

- multi-class: one label a row, a string (JSON lines may write an integer);
- multi-label (`--multi_label`): a JSON list of labels, or in CSV/TSV (and in
  JSON strings) the labels joined by `--label_separator`; an empty list or
  field is a row with no label;
- regression: a number.

The label set is read from the training file and sorted (numerically when
every label is an integer, else as strings), so that a label's id does not
depend on the order of the rows. A label in the eval or predict file that
the training file never has is an error naming it and its line.

Multi-label runs hold out a share of the training rows (by a stable hash of
the row's texts and labels, so duplicates stay on one side) to choose the
decision threshold; they form the "heldout" split.
"""

import dataclasses
import functools
import json
import math
import os
import zlib

from albert_tf.tasks import user_files
from albert_tf.tasks.base import Example

MULTI_CLASS, MULTI_LABEL, REGRESSION = "multi_class", "multi_label", "regression"


@dataclasses.dataclass(frozen=True)
class LabelStats:
    """The labels of a training file: `labels` in id order and how many rows have each."""

    labels: tuple
    counts: tuple
    rows: int

    @functools.cached_property
    def ids(self):
        return {label: i for i, label in enumerate(self.labels)}


def sort_labels(labels):
    """The stable label order: numeric when every label is an integer, else by string."""
    labels = set(labels)
    if labels and all(_is_integer(label) for label in labels):
        return tuple(sorted(labels, key=lambda label: (int(label), label)))
    return tuple(sorted(labels))


def _is_integer(text):
    try:
        int(text)
    except ValueError:
        return False
    return True


def _kind(value):
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _text(row, column, where):
    value = row.values[column]
    if not isinstance(value, str):
        raise ValueError(f"{where}: column {column!r}: expected a string, got {_kind(value)}")
    return value


def _one_label(value, column, where):
    """A label as a string: strings are stripped, integers written as digits."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise ValueError(f"{where}: column {column!r}: expected a label (a string or an "
                         f"integer), got {_kind(value)}")
    value = value.strip()
    if not value:
        raise ValueError(f"{where}: column {column!r}: empty label")
    return value


def _label_set(value, options, where):
    """A multi-label row's labels, a sorted tuple without repeats."""
    column, separator = options.label_column, options.label_separator
    if isinstance(value, list):
        labels = [_one_label(v, column, where) for v in value]
    elif isinstance(value, str):
        # Without a separator (JSON lines only: CSV/TSV need one) a string is one label.
        labels = [part.strip() for part in (value.split(separator) if separator else [value])]
        labels = [label for label in labels if label]
    else:
        raise ValueError(f"{where}: column {column!r}: expected a list of labels or a "
                         f"string, got {_kind(value)}")
    return tuple(sorted(set(labels)))


def _score(value, column, where):
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ValueError(f"{where}: column {column!r}: expected a number, got "
                             f"{value!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where}: column {column!r}: expected a number, got {_kind(value)}")
    if not math.isfinite(value):
        raise ValueError(f"{where}: column {column!r}: expected a finite number, got {value}")
    return float(value)


def row_label(row, kind, options, where):
    """The label of a data row: a string, a tuple of strings, or a float."""
    value = row.values[options.label_column]
    if kind == REGRESSION:
        return _score(value, options.label_column, where)
    if kind == MULTI_LABEL:
        return _label_set(value, options, where)
    return _one_label(value, options.label_column, where)


def is_heldout(example, fraction):
    """Whether a training row is held out, by a CRC-32 of its content (stable across
    runs, machines and row orders)."""
    if fraction <= 0:
        return False
    key = json.dumps([example.text_a, example.text_b, example.label], ensure_ascii=False)
    return zlib.crc32(key.encode("utf-8")) % 10_000 < fraction * 10_000


def file_rows(options, data_dir, split, task_name, labelled):
    """`(row, where)` of a split's file, its columns checked on every row."""
    path = user_files.split_file(options, data_dir, split, task_name)
    wanted = [options.text_column, options.text_pair_column or None]
    if labelled:
        wanted.append(options.label_column)
    for row in user_files.read_rows(path, options.format):
        user_files.check_columns(path, row, wanted)
        yield row, row.where


def _guid(row):
    """The row's `id` column when it has one, else its line number (as a string)."""
    value = row.values.get("id")
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        return str(row.line)
    return str(value)


def read_split(options, data_dir, split, kind, task_name, known=None):
    """Yields the `Example`s of one split's file, streaming.

    split: "train", "dev" (labelled) or "test" (unlabelled: a non-empty label, if
        the file has them, is checked against `known` but not kept).
    known: the training labels (`LabelStats`); a label outside them is an error.
    """
    labelled = split != "test"
    for row, where in file_rows(options, data_dir, split, task_name, labelled):
        text_b = _text(row, options.text_pair_column, where) if options.text_pair_column \
            else None
        label = None
        if labelled or (kind != REGRESSION and row.values.get(options.label_column)
                        not in (None, "", [])):
            label = row_label(row, kind, options, where)
        if known is not None and label is not None and kind != REGRESSION:
            _check_known(label, known, options.label_column, where)
        yield Example(_guid(row), _text(row, options.text_column, where), text_b,
                      label if labelled else None)


def _check_known(label, known, column, where):
    for one in (label if isinstance(label, tuple) else (label,)):
        if one not in known.ids:
            shown = ", ".join(known.labels[:20]) + (", ..." if len(known.labels) > 20 else "")
            raise ValueError(f"{where}: column {column!r}: label {one!r} is not in the "
                             f"training file (its labels: {shown})")


class FileExamples:
    """The examples of a file, read again on each iteration instead of held in memory.

    `make` returns a fresh iterator of `Example`s; `len()` counts them in one
    pass (which also checks every row, before any long work starts).
    """

    def __init__(self, make):
        self._make, self._count = make, None

    def __iter__(self):
        return iter(self._make())

    def __len__(self):
        if self._count is None:
            self._count = sum(1 for _ in self._make())
        return self._count

    def __bool__(self):
        return len(self) > 0


def label_stats(options, data_dir, kind, task_name, cache=None):
    """The `LabelStats` of the training file; `cache`: a dict (a bound task's
    `run_cache`) that keeps them for the run, per file version."""
    path = user_files.split_file(options, data_dir, "train", task_name)
    stat = os.stat(path)
    key = ("label_stats", os.path.abspath(path), stat.st_size, stat.st_mtime_ns, kind,
           options.format, options.label_column, options.label_separator,
           options.text_column, options.text_pair_column)
    if cache is not None and key in cache:
        return cache[key]
    counts, rows = {}, 0
    for row, where in file_rows(options, data_dir, "train", task_name, True):
        label = row_label(row, kind, options, where)
        for one in (label if isinstance(label, tuple) else (label,)):
            counts[one] = counts.get(one, 0) + 1
        rows += 1
    labels = sort_labels(counts)
    stats = LabelStats(labels, tuple(counts[label] for label in labels), rows)
    if cache is not None:
        cache[key] = stats
    return stats


def balanced_weights(stats):
    """scikit-learn's "balanced" class weights: n_samples / (n_classes * count)."""
    return tuple(stats.rows / (len(stats.labels) * count) for count in stats.counts)
