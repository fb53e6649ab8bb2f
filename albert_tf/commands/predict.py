r"""Predictions from raw text, as JSON lines, with an exported or fine-tuned model.

    python -m albert_tf.predict --model=exports/rte --text_a="A man sleeps." --text_b="He rests."
    python -m albert_tf.predict --model=exports/squad --input=questions.tsv --output=answers.jsonl
    cat questions.jsonl | python -m albert_tf.predict --model=runs/squad_v2/model

`--model`: a SavedModel version folder, an export root (its highest numeric
version is used), or a fine-tuned `model/` folder (or the run's output
folder), exported in memory. Each input row gives the model's inputs, by the
names the model declares (its export's `assets.extra/albert_tf_export.json`
lists them under `inputs`: `text` (or `text_a`) for one-sentence tasks,
`text_a` and `text_b` for pairs, `question` and `context` for SQuAD, `context`,
`question` and `choices` for multiple choice), or by the columns the model was
trained on (`--text_column=sentence`: a `sentence` column); an `id` field is
copied to the output.

Input: one row from the command line, `--row='{"question": "Who?", "context":
"Anna did."}'` (a JSON object, as a line of JSON lines), where `--text_a`,
`--text_b`, `--question` and `--context` set one field each; or
`--input=FILE`, read as training reads its files: CSV or TSV with a header row
naming the columns (`.csv`, `.tsv`), or JSON lines (any other name, or
`--format`); or JSON lines on stdin. Output: one JSON object per row, the
`serving_default` outputs (SERVING.md) in their readable form, on stdout or in
`--output` (written only when complete). `albert_tf.api.load(path)` is the same
model in Python (`Predictor`).
"""

import contextlib
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from albert_tf.commands.predictor import (FIELD_FLAGS, PredictSettings, Predictor,  # noqa: E402
                                          answers, checked_row)
from albert_tf.commands.program import Flags, Program  # noqa: E402
from albert_tf.io_utils import decoded_lines, row_format  # noqa: E402
from albert_tf.io_utils import read_rows as io_read_rows  # noqa: E402

STDIN = "<stdin>"


def read_rows(lines, name, names, lists=(), columns=None, fmt="auto"):
    """`(where, row)` of each input row, checked; read as training reads its
    files (`albert_tf.io_utils.read_rows`): CSV or TSV by extension, else
    JSON lines.

    lines: `(line number, text)` pairs (`albert_tf.io_utils.decoded_lines`).
    """
    for row in io_read_rows(lines, name, row_format(name, fmt, default="jsonl")):
        yield row.where, checked_row(row.values, names, row.where, lists, columns)


def predict_rows(predictor, rows, batch_size, out, raw=False, collect=False):
    """Writes one JSON line per `(where, row)` to `out` (None: nowhere); returns how
    many, or with `collect` the answers."""
    count, collected = 0, []
    for result in answers(predictor, rows, batch_size, raw):
        if out is not None:
            out.write(json.dumps(result, ensure_ascii=False) + "\n")
            out.flush()
        if collect:
            collected.append(result)
        count += 1
    return collected if collect else count


def command_row(settings, names, lists=(), columns=None):
    """The row of the command line: `--row` with the field flags set over it."""
    row = {}
    if settings.row is not None:
        try:
            row = json.loads(settings.row)
        except ValueError as e:
            raise ValueError(f"--row: not JSON ({e})") from None
        if not isinstance(row, dict):
            raise ValueError(f"--row: expected a JSON object naming the inputs "
                             f"({', '.join(names)}), got {type(row).__name__}")
    fields = {name: getattr(settings, name) for name in FIELD_FLAGS
              if getattr(settings, name) is not None}
    unused = sorted(set(fields) - set(names) - ({"text_a"} if names == ("text",) else set()))
    if unused:
        raise ValueError(f"the model takes {', '.join(names)}, not --{', --'.join(unused)}")
    return checked_row({**row, **fields}, names, "command line", lists, columns)


@contextlib.contextmanager
def _input_rows(settings, predictor):
    """The checked input rows: from the command line's row, --input, or stdin."""
    names, lists, columns = predictor.input_names, predictor.list_inputs, predictor.columns
    if settings.row_flags():
        yield [("command line", command_row(settings, names, lists, columns))]
    elif settings.input and settings.input != "-":
        with open(settings.input, "rb") as f:
            yield read_rows(decoded_lines(f, settings.input), settings.input, names, lists,
                            columns, settings.format)
    else:
        yield read_rows(decoded_lines(sys.stdin.buffer, STDIN), STDIN, names, lists, columns,
                        settings.format)


@contextlib.contextmanager
def _output(path, echo):
    if not path:
        yield sys.stdout if echo else None
        return
    from albert_tf.io_utils import atomic_file

    with atomic_file(path, "w", encoding="utf-8") as f:
        yield f


def run(settings, echo=True, predictor=None):
    """Prints a JSON line per row (`echo`; or writes `--output`); returns the
    answers (with `echo`, how many rows). `predictor`: the model loaded already
    (`albert_tf.api.load`)."""
    if settings.input and settings.input != "-" and not os.path.isfile(settings.input):
        raise FileNotFoundError(f"--input: no such file {settings.input}")
    if settings.output and os.path.isdir(settings.output):
        raise IsADirectoryError(f"--output: {settings.output} is a folder; give the file to "
                                "write the JSON lines to")
    predictor = predictor or Predictor(settings.model)
    with _input_rows(settings, predictor) as rows, _output(settings.output, echo) as out:
        return predict_rows(predictor, rows, settings.batch_size, out, settings.raw,
                            collect=not echo)


PROGRAM = Program("predict", run, Flags(PredictSettings), quiet=False)
