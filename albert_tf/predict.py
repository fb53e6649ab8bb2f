r"""Predictions from raw text, as JSON lines, with an exported or fine-tuned model.

    python -m albert_tf.predict --model=exports/rte --text_a="A man sleeps." --text_b="He rests."
    python -m albert_tf.predict --model=exports/squad --input=questions.tsv --output=answers.jsonl
    cat questions.jsonl | python -m albert_tf.predict --model=runs/squad_v2/model

`--model`: a SavedModel version folder, an export root (its highest numeric
version is used), or a fine-tuned `model/` folder (or the run's output
folder), exported in memory. Each input row gives the model's inputs:
`text` (or `text_a`) for one-sentence tasks, `text_a` and `text_b` for pairs,
`question` and `context` for SQuAD, or the columns the model was trained on
(`--text_column=sentence`: a `sentence` column); an `id` field is copied to
the output.

Input: the flags; or `--input=FILE`, read as training reads its files: CSV or
TSV with a header row naming the columns (`.csv`, `.tsv`), or JSON lines (any
other name, or `--format`); or JSON lines on stdin. Output: one JSON object per row, the `serving_default`
outputs (SERVING.md), on stdout or in `--output` (written only when complete).
"""

import contextlib
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags  # noqa: E402

from albert_tf import cli  # noqa: E402
from albert_tf.export import INFO_FILE  # noqa: E402 - the package, without TensorFlow
from albert_tf.io_utils import ROW_FORMATS, chunks, decoded_lines, row_format  # noqa: E402
from albert_tf.io_utils import read_rows as io_read_rows  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("model", None, "Export folder (version or root) or fine-tuned model/ folder.")
flags.DEFINE_string("text_a", None, "The text (one-sentence tasks) or the first text of a pair.")
flags.DEFINE_string("text_b", None, "The second text of a pair.")
flags.DEFINE_string("question", None, "SQuAD: the question.")
flags.DEFINE_string("context", None, "SQuAD: the paragraph to answer from.")
flags.DEFINE_string("input", None, "A .csv or .tsv file with a header row, or a JSON lines "
                    "file; default: JSON lines on stdin (when no text flag is given).")
flags.DEFINE_enum("format", "auto", ROW_FORMATS, "--input's format; auto: by extension "
                  "(.csv, .tsv; anything else JSON lines), as training reads its files.")
flags.DEFINE_string("output", None, "Write the JSON lines here instead of stdout.")
flags.DEFINE_integer("batch_size", 32, "Rows per call of the model.")
flags.DEFINE_boolean("raw", False, "Print the signature's outputs as they are (padded arrays) "
                     "instead of the readable form (token classification: words with their "
                     "tags, and the entities).")

TEXT_FLAGS = ("text_a", "text_b", "question", "context")
STDIN = "<stdin>"


def find_saved_model(path):
    """`path` if it is a SavedModel, else its highest numeric version folder; or None."""
    if os.path.isfile(os.path.join(path, "saved_model.pb")):
        return path
    if not os.path.isdir(path):
        return None
    found = [int(n) for n in os.listdir(path) if n.isdigit()
             and os.path.isfile(os.path.join(path, n, "saved_model.pb"))]
    return os.path.join(path, str(max(found))) if found else None


class Predictor:
    """The `serving_default` function of `--model`, loaded on first use.

    `input_names` comes from the export's description when there is one, so
    that bad input is reported before TensorFlow is even imported.
    """

    def __init__(self, path):
        if not os.path.exists(path):
            raise FileNotFoundError(f"--model: no such file or folder {path}")
        self.path, self.saved_model = path, find_saved_model(path)
        self._function, self.input_names, self._called = None, None, False
        # Inputs of a list of strings a row (multiple choice's `choices`).
        self.list_inputs = ()
        # input name -> the column the model was trained on, where they differ.
        self.columns = {}
        info = os.path.join(self.saved_model or "", INFO_FILE)
        if self.saved_model and os.path.isfile(info):
            with open(info, encoding="utf-8") as f:
                info = json.load(f)
            self.input_names = tuple(info["inputs"])
            self.list_inputs = tuple(info.get("list_inputs", ()))
            self.columns = dict(info.get("columns", {}))
        else:
            self._load()

    def _load(self):
        # tensorflow_text registers the SentencePiece op.
        tf = cli.load_tensorflow("tensorflow_text")
        with cli.native_noise_filtered():  # a model folder is traced here: kernels run
            self._load_function(tf)

    def _load_function(self, tf):
        if self.saved_model:
            self._loaded = tf.saved_model.load(self.saved_model)
            self._function = self._loaded.signatures["serving_default"]
            specs = self._function.structured_input_signature[1]
            self.input_names = tuple(sorted(specs))
            self.list_inputs = tuple(n for n in self.input_names if specs[n].shape.rank == 2)
        else:
            from tasks.finetuned import build_serving_module

            self._loaded, info = build_serving_module(self.path)
            self._function = self._loaded.serving_default
            self.input_names = tuple(info["inputs"])
            self.list_inputs = tuple(info.get("list_inputs", ()))
            self.columns = dict(info.get("columns", {}))

    def __call__(self, columns):
        """columns: name -> list of str (of lists, for `list_inputs`). Returns name -> numpy
        array."""
        first, self._called = not self._called, True
        if self._function is None:
            self._load()
        tf = cli.load_tensorflow()
        tensors = {k: _string_tensor(tf, v, k in self.list_inputs) for k, v in columns.items()}
        # The first call runs kernels for the first time: their notes filtered too.
        with cli.native_noise_filtered() if first else contextlib.nullcontext():
            outputs = self._function(**tensors)
        return {k: v.numpy() for k, v in outputs.items()}


def _string_tensor(tf, values, is_list):
    """A string tensor `(rows,)` of `values`, or for a list input `(rows, longest)`, each
    row padded with "" (no entry). A lone surrogate (possible in JSON) becomes "?":
    one character for one, so character offsets still index the text as given."""
    def encoded(texts):
        return [t.encode("utf-8", "replace") for t in texts]

    if not is_list:
        return tf.constant(encoded(values), tf.string, shape=[len(values)])
    width = max(map(len, values), default=0)
    return tf.constant([encoded(row + [""] * (width - len(row))) for row in values],
                       tf.string, shape=[len(values), width])


def _row_fields(row, names, where, lists=(), columns=None):
    """The model's inputs from one input row (dict); `text_a` stands for `text`,
    and the column an input was trained on (`columns`: name -> column) for the
    input; the inputs in `lists` take a list of strings."""
    columns = columns or {}
    if names == ("text",) and "text" not in row and "text_a" in row:
        row = dict(row, text=row["text_a"])
    found = {n: row[columns[n]] for n in names if n not in row and columns.get(n) in row}
    if found:
        row = {**row, **found}
    missing = [n for n in names if n not in row]
    if missing:
        trained = [f"{n}: {columns[n]!r}" for n in names if n in columns]
        raise ValueError(f"{where}: missing {', '.join(map(repr, missing))} (the model takes "
                         f"{', '.join(names)}"
                         + (f"; trained on the columns {', '.join(trained)}" if trained else "")
                         + ")")
    for name in names:
        if name in lists:
            if not isinstance(row[name], list) or not all(isinstance(t, str) for t in row[name]):
                raise ValueError(f"{where}: {name!r} must be a list of strings (JSON lines), "
                                 f"got {type(row[name]).__name__}")
        elif not isinstance(row[name], str):
            raise ValueError(f"{where}: {name!r} must be a string, got {type(row[name]).__name__}")
    return row


def read_rows(lines, name, names, lists=(), columns=None, fmt="auto"):
    """`(where, row)` of each input row, checked; read as training reads its
    files (`albert_tf.io_utils.read_rows`): CSV or TSV by extension, else
    JSON lines.

    lines: `(line number, text)` pairs (`albert_tf.io_utils.decoded_lines`).
    """
    for row in io_read_rows(lines, name, row_format(name, fmt, default="jsonl")):
        yield row.where, _row_fields(row.values, names, row.where, lists, columns)


def _json_value(value):
    """A model output (numpy scalar or array, strings as bytes) as JSON values."""
    if hasattr(value, "tolist"):  # numpy: scalars and arrays as Python values
        value = value.tolist()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value


# The token-classification signature's outputs (SERVING.md), read into words and entities.
TOKEN_OUTPUTS = ("num_tokens", "token_tag", "token_start", "token_end", "num_entities",
                 "entity_type", "entity_text", "entity_start", "entity_end")


def tagged_words(outputs, i, text):
    """Row `i` of a token-classification model's outputs as a user reads it:
    `{"words": [{"word", "tag", "start", "end"}], "entities": [{"type", "text",
    "start", "end"}]}`. Sub-word tokens are merged into their word, which takes
    its first token's tag (Hugging Face's `aggregation_strategy="first"`);
    tokens that cover no character are left out; spans are code points of `text`."""
    words = []
    for j in range(int(outputs["num_tokens"][i])):
        tag = _json_value(outputs["token_tag"][i][j])
        start, end = int(outputs["token_start"][i][j]), int(outputs["token_end"][i][j])
        if end <= start:
            continue  # zero-width (a lone word-start piece)
        if tag or not words:
            words.append({"word": "", "tag": tag or "O", "start": start, "end": end})
        words[-1]["end"] = max(words[-1]["end"], end)
    for word in words:
        word["word"] = text[word["start"]:word["end"]]
    entities = [{"type": _json_value(outputs["entity_type"][i][j]),
                 "text": _json_value(outputs["entity_text"][i][j]),
                 "start": int(outputs["entity_start"][i][j]),
                 "end": int(outputs["entity_end"][i][j])}
                for j in range(int(outputs["num_entities"][i]))]
    return {"words": words, "entities": entities}


def _readable(outputs, i, row, raw):
    if not raw and all(name in outputs for name in TOKEN_OUTPUTS) and "text" in row:
        return tagged_words(outputs, i, row["text"])
    return {k: _json_value(v[i]) for k, v in sorted(outputs.items())}


def predict_rows(predictor, rows, batch_size, out, raw=False):
    """Writes one JSON line per `(where, row)` to `out`; returns how many."""
    count = 0
    for batch in chunks(rows, batch_size):
        columns = {n: [row[n] for _, row in batch] for n in predictor.input_names}
        outputs = predictor(columns)
        for i, (_, row) in enumerate(batch):
            result = {"id": row["id"]} if "id" in row else {}
            result.update(_readable(outputs, i, row, raw))
            out.write(json.dumps(result, ensure_ascii=False) + "\n")
        out.flush()
        count += len(batch)
    return count


@contextlib.contextmanager
def _input_rows(names, lists=(), columns=None):
    """The checked input rows: from the text flags, --input, or stdin."""
    given = {name: FLAGS[name].value for name in TEXT_FLAGS if FLAGS[name].value is not None}
    if given:
        unused = sorted(set(given) - set(names) - ({"text_a"} if names == ("text",) else set()))
        if unused:
            raise ValueError(f"the model takes {', '.join(names)}, not --{', --'.join(unused)}")
        yield [("command line", _row_fields(given, names, "command line", lists))]
    elif FLAGS.input and FLAGS.input != "-":
        with open(FLAGS.input, "rb") as f:
            yield read_rows(decoded_lines(f, FLAGS.input), FLAGS.input, names, lists, columns,
                            FLAGS.format)
    else:
        yield read_rows(decoded_lines(sys.stdin.buffer, STDIN), STDIN, names, lists, columns,
                        FLAGS.format)


@contextlib.contextmanager
def _output():
    if not FLAGS.output:
        yield sys.stdout
        return
    from albert_tf.io_utils import atomic_file

    with atomic_file(FLAGS.output, "w", encoding="utf-8") as f:
        yield f


def _check_flags():
    if FLAGS.batch_size < 1:
        raise ValueError(f"--batch_size must be positive, got {FLAGS.batch_size}")
    given = [name for name in TEXT_FLAGS if FLAGS[name].value is not None]
    if given and FLAGS.input:
        raise ValueError(f"give either --input or text flags ({', '.join(given)}), not both")
    if FLAGS.input and FLAGS.input != "-" and not os.path.isfile(FLAGS.input):
        raise FileNotFoundError(f"--input: no such file {FLAGS.input}")


def main(argv):
    with cli.user_errors():
        cli.check_arguments(argv, FLAGS, required=("model",))
        _check_flags()
        predictor = Predictor(FLAGS.model)
        with _input_rows(predictor.input_names, predictor.list_inputs,
                         predictor.columns) as rows, \
                _output() as out:
            predict_rows(predictor, rows, FLAGS.batch_size, out, FLAGS.raw)


if __name__ == "__main__":
    app.run(main)
