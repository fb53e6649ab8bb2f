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

import collections
import contextlib
import csv
import dataclasses
import io
import json
import os
import zlib

from albert_tf.io_utils import ROW_EXTENSIONS as EXTENSIONS  # noqa: F401 - part of this API
from albert_tf.io_utils import ROW_FORMATS as FORMATS
from albert_tf.io_utils import Row  # noqa: F401 - part of this API
from albert_tf.io_utils import atomic_directory, numbered_lines, row_format
from albert_tf.io_utils import read_rows as io_read_rows
from albert_tf.settings import Settings, setting

# The split each file flag feeds.
SPLIT_FLAGS = {"train": "train_file", "dev": "eval_file", "test": "predict_file"}


@dataclasses.dataclass(frozen=True, kw_only=True)
class FileOptions(Settings):
    train_file: str = setting("", "Own-data tasks: the training file (CSV, TSV or JSON lines).",
                              roles=("reads",))
    eval_file: str = setting("", "Own-data tasks: the labelled file --do_eval scores.",
                             roles=("reads",))
    predict_file: str = setting("", "Own-data tasks: the file --do_predict labels.",
                                roles=("reads",))
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


# -- k-fold splits of a training file ----------------------------------------------

KFOLD_MANIFEST = "folds.json"


@dataclasses.dataclass(frozen=True)
class Record:
    """One unit a fold takes whole: a row (CSV, TSV, JSON lines) or a CoNLL sentence.

    text: the unit as it is written into a fold's file; line: its first line in
    the training file; values: a row's values by column (None for CoNLL).
    """

    text: str
    line: int
    values: dict | None = None


def row_records(path, fmt="auto"):
    """`(header, records)`: a CSV/TSV file's header line ("" for JSON lines) and its
    rows as `Record`s, written back in the file's own format."""
    fmt = file_format(path, fmt)
    if fmt == "jsonl":
        return "", (Record(json.dumps(row.values, ensure_ascii=False) + "\n", row.line,
                           row.values) for row in read_rows(path, fmt))
    delimiter = "," if fmt == "csv" else "\t"
    columns = columns_of(path, fmt)

    def records():
        for row in read_rows(path, fmt):
            yield Record(_delimited([row.values[c] for c in columns], delimiter), row.line,
                         row.values)
    return _delimited(columns, delimiter), records()


def _delimited(fields, delimiter):
    out = io.StringIO()
    csv.writer(out, delimiter=delimiter, lineterminator="\n").writerow(fields)
    return out.getvalue()


def block_records(path):
    """`("", records)`: the sentences of a CoNLL file (runs of non-blank lines;
    `-DOCSTART-` lines dropped), each written back with a blank line after it."""
    def records():
        lines, first = [], None
        for number, line in numbered_lines(path):
            fields = line.split()
            if not fields or fields[0] == "-DOCSTART-":
                if lines:
                    yield Record("".join(lines) + "\n", first)
                lines = []
                continue
            first = number if not lines else first
            lines.append(line if line.endswith("\n") else line + "\n")
        if lines:
            yield Record("".join(lines) + "\n", first)
    return "", records()


def stable_fold(record, k):
    """The fold (0..k-1) of a record by a CRC-32 of its text: the same on every
    machine and run, and duplicates share a fold."""
    return zlib.crc32(record.text.encode("utf-8")) % k


def check_kfold_options(options, task_name):
    """`--kfold` splits `--train_file` alone: a `ValueError` if the other files are given."""
    if not options.train_file:
        raise ValueError(f"--kfold splits --train_file; task {task_name!r} got none")
    others = [f"--{flag}" for flag in ("eval_file", "predict_file") if getattr(options, flag)]
    if others:
        raise ValueError(f"--kfold scores each fold on its own held-out rows; give only "
                         f"--train_file, not {', '.join(others)}")


def write_folds(path, k, folder, read_records, stratum=None):
    """Writes the K folds of the training file at `path` into `folder` (once: a
    later start reads them back) and returns their `albert_tf.training.seeds_folds.Fold`s.

    read_records: `() -> (header, records)` (`row_records` or `block_records`),
        called once, or twice when stratifying.
    stratum: `record -> key` to stratify by (e.g. the label): the records sorted by
        key (stably) are dealt to the folds in turn, so every fold has each key's
        count divided by K, within one; None: folds by `stable_fold`.
    """
    from albert_tf.training.seeds_folds import Fold

    stat = os.stat(path)
    source = {"file": os.path.abspath(path), "bytes": stat.st_size,
              "mtime_ns": stat.st_mtime_ns, "k": k, "stratified": stratum is not None}
    manifest = os.path.join(folder, KFOLD_MANIFEST)
    if not os.path.isfile(manifest):
        _write_folds(path, k, folder, read_records, stratum, source)
    with open(manifest, encoding="utf-8") as f:
        saved = json.load(f)
    if saved["source"] != source:
        raise ValueError(f"{folder} holds the folds of another training file or --kfold "
                         f"({saved['source']}); use a new --output_dir")
    extension = os.path.splitext(path)[1]
    return [Fold(i + 1, os.path.join(folder, f"fold-{i + 1}-train{extension}"),
                 os.path.join(folder, f"fold-{i + 1}-dev{extension}"), tuple(lines))
            for i, lines in enumerate(saved["lines"])]


def _write_folds(path, k, folder, read_records, stratum, source):
    assign = lambda record: stable_fold(record, k)  # noqa: E731
    if stratum is not None:
        _, records = read_records()
        counts = collections.Counter(stratum(r) for r in records)
        offsets, total = {}, 0
        for key in sorted(counts):
            offsets[key], total = total, total + counts[key]
        seen = collections.Counter()

        def assign(record):  # noqa: F811
            key = stratum(record)
            seen[key] += 1
            return (offsets[key] + seen[key] - 1) % k
    extension = os.path.splitext(path)[1]
    lines = [[] for _ in range(k)]
    with atomic_directory(folder) as tmp, contextlib.ExitStack() as files:
        open_file = lambda name: files.enter_context(  # noqa: E731
            open(os.path.join(tmp, name), "w", encoding="utf-8", newline=""))
        trains = [open_file(f"fold-{i + 1}-train{extension}") for i in range(k)]
        devs = [open_file(f"fold-{i + 1}-dev{extension}") for i in range(k)]
        header, records = read_records()
        for f in trains + devs:
            f.write(header)
        for record in records:
            fold = assign(record)
            lines[fold].append(record.line)
            devs[fold].write(record.text)
            for other in range(k):
                if other != fold:
                    trains[other].write(record.text)
        empty = [i + 1 for i in range(k) if not lines[i]]
        if empty:
            rows = sum(map(len, lines))
            raise ValueError(f"--kfold={k}: {path} has {rows} row(s), and fold(s) "
                             f"{', '.join(map(str, empty))} would hold none; use fewer folds")
        files.close()
        with open(os.path.join(tmp, KFOLD_MANIFEST), "w", encoding="utf-8") as f:
            json.dump({"source": source, "lines": lines}, f)
