"""The user's own data files: which file each split reads, and their rows.

The tasks on the user's own files (text classification and regression, token
classification, multiple choice) take `--train_file`, `--eval_file` (what
`--do_eval` scores) and `--predict_file` (what `--do_predict` labels), all of
one `--format`: CSV or TSV with a header row, or JSON lines (one object a
line); "auto" picks it by extension. `--data_dir`, when given, is the folder
relative paths start from.

Rows are read one at a time (`read_rows`), so a task can stream a file larger
than memory; every problem names the file and its line.
"""

import csv
import dataclasses
import os

from albert_tf.io_utils import json_objects, numbered_lines
from albert_tf.settings import Settings, setting

FORMATS = ("auto", "csv", "tsv", "jsonl")
EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl",
              ".ndjson": "jsonl"}
# The split each file flag feeds.
SPLIT_FLAGS = {"train": "train_file", "dev": "eval_file", "test": "predict_file"}


@dataclasses.dataclass(frozen=True, kw_only=True)
class FileOptions(Settings):
    train_file: str = setting("", "Own-data tasks: the training file (CSV, TSV or JSON lines).")
    eval_file: str = setting("", "Own-data tasks: the labelled file --do_eval scores.")
    predict_file: str = setting("", "Own-data tasks: the file --do_predict labels.")
    format: str = setting("auto", "Own-data tasks: the files' format; auto: by extension "
                          "(.csv, .tsv, .jsonl or .json).", choices=FORMATS)


@dataclasses.dataclass(frozen=True)
class Row:
    """One data row: its values by column name, and where it is (`file:line`)."""

    values: dict
    where: str
    line: int


def split_file(options, data_dir, split, task_name):
    """The path of the file `split` reads; a `ValueError` naming the flag if
    it is not given or does not exist."""
    if split not in SPLIT_FLAGS:
        raise ValueError(f"task {task_name!r} has no split {split!r}; splits: "
                         f"{', '.join(SPLIT_FLAGS)}")
    flag = SPLIT_FLAGS[split]
    path = getattr(options, flag)
    if not path:
        raise ValueError(f"task {task_name!r} reads its {split} split from --{flag}; "
                         "none given")
    if data_dir and not os.path.isabs(path):
        path = os.path.join(data_dir, path)
    if not os.path.isfile(path):
        raise ValueError(f"--{flag}={path}: no such file")
    return path


def file_format(path, given="auto"):
    """`given`, or for "auto" the format the extension says."""
    if given != "auto":
        return given
    extension = os.path.splitext(path)[1].lower()
    if extension not in EXTENSIONS:
        raise ValueError(f"{path}: cannot tell the format from the extension "
                         f"{extension or '(none)'!r}; name it with --format="
                         f"{'|'.join(FORMATS[1:])}")
    return EXTENSIONS[extension]


def read_rows(path, fmt="auto"):
    """Yields the `Row`s of a CSV, TSV or JSON-lines file, streaming.

    CSV/TSV: the first row names the columns; a row with another number of
    fields is an error naming its line. JSON lines: each non-blank line is
    one object.
    """
    fmt = file_format(path, fmt)
    if fmt == "jsonl":
        yield from _json_rows(path)
    else:
        yield from _delimited_rows(path, "," if fmt == "csv" else "\t")


def _json_rows(path):
    for number, value in json_objects(numbered_lines(path), path):
        yield Row(value, f"{path}:{number}", number)


def _delimited_rows(path, delimiter):
    reader = csv.reader((text for _, text in numbered_lines(path)), delimiter=delimiter)
    header, previous = None, 0
    try:
        for fields in reader:
            # The line the row starts on (a quoted field may span several lines).
            start, previous = previous + 1, reader.line_num
            if not fields or fields == [""]:
                continue  # a blank line
            if header is None:
                header = [name.strip() for name in fields]
                continue
            where = f"{path}:{start}"
            if len(fields) != len(header):
                raise ValueError(f"{where}: expected {len(header)} fields (columns "
                                 f"{', '.join(header)}), got {len(fields)}")
            yield Row(dict(zip(header, fields)), where, start)
    except csv.Error as e:
        raise ValueError(f"{path}:{reader.line_num}: {e}") from None


def columns_of(path, fmt="auto"):
    """The column names of a file (a CSV/TSV header, or the first JSON object's keys)."""
    for row in read_rows(path, fmt):
        return list(row.values)
    return []


def check_columns(path, row, wanted):
    """Raises a `ValueError` naming the file and the columns it has if `row`
    lacks a column of `wanted` (None entries are skipped)."""
    missing = [name for name in wanted if name and name not in row.values]
    if missing:
        raise ValueError(f"{path}: no column {', '.join(repr(m) for m in missing)}; it has "
                         f"{', '.join(repr(c) for c in row.values) or 'none'}")
