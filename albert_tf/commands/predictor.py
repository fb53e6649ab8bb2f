"""The model `predict` answers with: `Predictor`, also what `albert_tf.api.load` returns.

A `Predictor` is a fine-tuned model folder or an export behind its
`serving_default` function, with the names of the raw inputs the model
declares (its export's `assets.extra/albert_tf_export.json`, or the task's
serving module): `predict(rows)` answers rows of raw text in batches, in the
readable form the command prints (`answers`), and `keras_model` is the Keras
model. `PredictSettings` are the command's flags, checked here for both.
"""

import contextlib
import dataclasses
import json
import os

from albert_tf import startup
from albert_tf.export import INFO_FILE  # the package, without TensorFlow
from albert_tf.io_utils import ROW_FORMATS, chunks
from albert_tf.settings import POSITIVE, Settings, setting

# Shorthands of one field of the command line's row (`--text_a=...`).
FIELD_FLAGS = ("text_a", "text_b", "question", "context")


@dataclasses.dataclass(frozen=True, kw_only=True)
class PredictSettings(Settings):
    """The flags of `predict` (the keyword arguments of `albert_tf.api.predict`)."""

    model: str = setting(
        help="Export folder (version or root) or fine-tuned model/ folder (or its run's "
        "output folder).", roles=("reads",))
    row: str | None = setting(
        None, "One input row, a JSON object naming the model's inputs (the `inputs` of its "
        "export's albert_tf_export.json, or the columns it was trained on), e.g. "
        "--row='{\"question\": \"Who?\", \"context\": \"Anna did.\"}'; --text_a, "
        "--text_b, --question and --context set one field of it.")
    text_a: str | None = setting(
        None, "The row's text_a: the text (one-sentence tasks) or the first text of a pair.")
    text_b: str | None = setting(None, "The row's text_b: the second text of a pair.")
    question: str | None = setting(None, "The row's question (SQuAD, multiple choice).")
    context: str | None = setting(None, "The row's context: the paragraph to answer from.")
    input: str | None = setting(
        None, "A .csv or .tsv file with a header row, or a JSON lines file; default: JSON "
        "lines on stdin (when no row is given).", roles=("reads",))
    format: str = setting("auto", "--input's format; auto: by extension (.csv, .tsv; "
                          "anything else JSON lines), as training reads its files.",
                          choices=ROW_FORMATS)
    output: str | None = setting(None, "Write the JSON lines here instead of stdout.",
                                 roles=("writes",))
    batch_size: int = setting(32, "Rows per call of the model.", rule=POSITIVE)
    raw: bool = setting(False, "Print the signature's outputs as they are (padded arrays) "
                        "instead of the readable form (token classification: words with "
                        "their tags, and the entities).")

    def row_flags(self):
        """The flags that give the command line's row."""
        return [name for name in ("row", *FIELD_FLAGS) if getattr(self, name) is not None]

    def checks(self):
        given = self.row_flags()
        return ((not (given and self.input),
                 f"give either --input or a row ({', '.join(f'--{n}' for n in given)}), "
                 "not both"),)


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
    """A fine-tuned model or an export, on raw text: what `predict` runs, and what
    `albert_tf.api.load(path)` returns.

    `path`: a SavedModel version folder, an export root (its highest version),
    a fine-tuned `model/` folder or its run's output folder (exported in
    memory). The `serving_default` function is loaded on first use;
    `input_names` comes from the export's description when there is one, so
    that bad input is reported before TensorFlow is even imported.
    `predict(inputs)` gives the answers; `keras_model` the Keras model.
    """

    def __init__(self, path):
        if not isinstance(path, (str, bytes, os.PathLike)):
            raise TypeError(f"load(path): path must be a folder's path (str or os.PathLike), "
                            f"got {type(path).__name__} {path!r:.60}")
        path = os.fsdecode(path)
        if not os.path.exists(path):
            raise FileNotFoundError(f"--model: no such file or folder {path}")
        self.path, self.saved_model = path, find_saved_model(path)
        self._function, self.input_names, self._called = None, None, False
        self._keras_model = None
        # Inputs of a list of strings a row (multiple choice's `choices`).
        self.list_inputs = ()
        # input name -> the column the model was trained on, where they differ.
        self.columns = {}
        # The model's description (`assets.extra/albert_tf_export.json` of an export).
        self.info = {}
        self._phone = None
        info = os.path.join(self.saved_model or "", INFO_FILE)
        if os.path.isfile(path) and path.endswith(".tflite"):
            self._open_phone(path)
        elif self.saved_model and os.path.isfile(info):
            with open(info, encoding="utf-8") as f:
                self._describe(json.load(f))
        else:
            self._load()

    def _open_phone(self, path):
        """A phone export (`mediapipe/*.tflite`), run without TensorFlow
        (`albert_tf.export.formats.phone.runtime`: MediaPipe where installed, else LiteRT)."""
        from albert_tf.export.formats.phone.runtime import PhoneModel

        self._phone = PhoneModel(path)
        self._function = self._phone
        self.input_names = ("text",)
        self.info = {"inputs": ["text"], "runtime": self._phone.runtime}

    def _describe(self, info):
        self.info = dict(info)
        self.input_names = tuple(info["inputs"])
        self.list_inputs = tuple(info.get("list_inputs", ()))
        self.columns = dict(info.get("columns", {}))

    def __repr__(self):
        return (f"Predictor({self.path!r}: task {self.info.get('task', '?')}, inputs "
                f"{', '.join(self.input_names or ())})")

    @property
    def task(self):
        """The task's name (None for an export without a description)."""
        return self.info.get("task")

    @property
    def keras_model(self):
        """The task's Keras model (backbone and head; `compile`/`fit` it as any
        other). For a fine-tuned folder it is the model this object serves, so
        that its weights, once fitted, are what `predict` answers with; for an
        export it is read from the fine-tuned folder the export was made from."""
        if self._keras_model is None:
            if self._function is None or self.saved_model:
                self._keras_model = self._finetuned_model()
            else:
                self._keras_model = self._loaded._predict.func
        return self._keras_model

    def _finetuned_model(self):
        model_dir = self.info.get("model_dir") if self.saved_model else self.path
        if not model_dir or not os.path.isdir(model_dir):
            raise FileNotFoundError(
                f"{self.path}: an export holds no Keras model, and the fine-tuned folder it "
                f"was made from ({model_dir or 'not recorded'}) is not here; load that folder")
        startup.load_tensorflow("tensorflow_text")
        from albert_tf.tasks.finetuned import load_finetuned

        return load_finetuned(model_dir)[2]

    def rows(self, inputs):
        """`(where, row)` of each of `inputs`, checked: a list (or one) of rows,
        each a dict (input names or trained columns -> text), a tuple in the order
        of `input_names`, or a str (a model of one input); or a pandas DataFrame."""
        if isinstance(inputs, (str, dict, tuple)):
            inputs = [inputs]
        elif hasattr(inputs, "to_dict") and hasattr(inputs, "columns"):  # a DataFrame
            # (a cell left empty, NaN, is no value)
            inputs = [{k: v for k, v in row.items() if v == v}
                      for row in inputs.to_dict("records")]
        names = self.input_names
        for i, row in enumerate(inputs):
            where = f"inputs[{i}]"
            if isinstance(row, str):
                if len(names) != 1:
                    raise ValueError(f"{where}: a text, but the model takes {', '.join(names)}: "
                                     "give a dict naming them, or a tuple in that order")
                row = {names[0]: row}
            elif isinstance(row, (tuple, list)):
                if len(row) != len(names):
                    raise ValueError(f"{where}: {len(row)} values, but the model takes "
                                     f"{len(names)} ({', '.join(names)})")
                row = dict(zip(names, row))
            elif not isinstance(row, dict):
                raise ValueError(f"{where}: expected a dict, a tuple or a str, got "
                                 f"{type(row).__name__}")
            yield where, checked_row(row, names, where, self.list_inputs, self.columns)

    def predict(self, inputs, batch_size=32, raw=False):
        """The answers to `inputs` (see `rows`), a dict per row as `predict` prints
        them (the readable form of the serving outputs, or with `raw` the
        outputs as they are), `batch_size` rows per call."""
        PredictSettings(model=self.path, batch_size=batch_size, raw=raw)  # checks them
        if inputs is None or isinstance(inputs, (int, float, bool, bytes)):
            raise TypeError(f"predict(inputs): inputs must be rows (a list of dicts, tuples "
                            f"or strings, one row, or a pandas DataFrame), got "
                            f"{type(inputs).__name__} {inputs!r:.60}")
        return list(answers(self, self.rows(inputs), batch_size, raw))

    def _load(self):
        # tensorflow_text registers the SentencePiece op.
        tf = startup.load_tensorflow("tensorflow_text")
        with startup.native_noise_filtered():  # a model folder is traced here: kernels run
            self._load_function(tf)

    def _load_function(self, tf):
        if self.saved_model:
            self._loaded = tf.saved_model.load(self.saved_model)
            self._function = self._loaded.signatures["serving_default"]
            specs = self._function.structured_input_signature[1]
            self.input_names = tuple(sorted(specs))
            self.list_inputs = tuple(n for n in self.input_names if specs[n].shape.rank == 2)
        else:
            from albert_tf.tasks.finetuned import build_serving_module

            self._loaded, info = build_serving_module(self.path)
            self._function = self._loaded.serving_default
            self._describe(info)

    def __call__(self, columns):
        """columns: name -> list of str (of lists, for `list_inputs`). Returns name -> numpy
        array."""
        if self._phone is not None:
            return self._phone(list(columns["text"]))
        first, self._called = not self._called, True
        if self._function is None:
            self._load()
        tf = startup.load_tensorflow()
        tensors = {k: _string_tensor(tf, v, k in self.list_inputs) for k, v in columns.items()}
        # The first call runs kernels for the first time: their notes filtered too.
        with startup.native_noise_filtered() if first else contextlib.nullcontext():
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


def checked_row(row, names, where, lists=(), columns=None):
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


def answers(predictor, rows, batch_size, raw=False):
    """The answer (a dict of JSON values) to each `(where, row)`, `batch_size` rows
    per call of `predictor`: `row`, the input's position (from 0: a list's index,
    a file's data rows), then its `id` copied where it has one, then the outputs."""
    position = 0
    for batch in chunks(rows, batch_size):
        columns = {n: [row[n] for _, row in batch] for n in predictor.input_names}
        outputs = predictor(columns)
        for i, (_, row) in enumerate(batch):
            result = {"row": position, **({"id": row["id"]} if "id" in row else {})}
            result.update(_readable(outputs, i, row, raw))
            position += 1
            yield result
