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

import dataclasses
import os

from albert_tf.io_utils import ROW_EXTENSIONS as EXTENSIONS  # noqa: F401 - part of this API
from albert_tf.io_utils import ROW_FORMATS as FORMATS
from albert_tf.io_utils import Row  # noqa: F401 - part of this API
from albert_tf.io_utils import numbered_lines, row_format
from albert_tf.io_utils import read_rows as io_read_rows
from albert_tf.settings import Settings, setting

# The split each file flag feeds.
SPLIT_FLAGS = {"train": "train_file", "dev": "eval_file", "test": "predict_file"}


@dataclasses.dataclass(frozen=True, kw_only=True)
class FileOptions(Settings):
    train_file: str = setting("", "Own-data tasks: the training file (CSV, TSV or JSON lines).")
    eval_file: str = setting("", "Own-data tasks: the labelled file --do_eval scores.")
    predict_file: str = setting("", "Own-data tasks: the file --do_predict labels.")
    format: str = setting("auto", "Own-data tasks: the files' format; auto: by extension "
                          "(.csv, .tsv, .jsonl or .json).", choices=FORMATS)


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
    return row_format(path, given)


def read_rows(path, fmt="auto"):
    """Yields the `Row`s of a CSV, TSV or JSON-lines file, streaming
    (`albert_tf.io_utils.read_rows`, which `predict` reads its input with too)."""
    yield from io_read_rows(numbered_lines(path), path, file_format(path, fmt))


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
