r"""The commands as Python functions, for notebooks and scripts.

    from albert_tf.commands import api

    results = api.finetune(task="text_classification", train_file=frame,
                           text_column="review", label_column="stars",
                           init_checkpoint="albert_base_v2", output_dir="runs/reviews")
    model = api.load("runs/reviews")
    model.predict(["A fine film.", "Dull."])    # [{"label": ..., "probabilities": ...}, ...]
    api.export(model_dir="runs/reviews", export_dir="exports/reviews")

Each function takes its command's flags as keyword arguments (`batch_size=16`
for `--batch_size=16`), checks them as the command does (its `PROGRAM`, the
one entry of `albert_tf.commands.program`) and runs the command's own code:
the same files are written, the same lines printed, and what the command
prints comes back as a dict (`predict`: a list of answers, one dict per row).
A mistake of the user's raises the exception whose message is the line the
command prints after `error: ` (a `ValueError`, an `OSError` such as
`FileNotFoundError`, a `albert_tf.errors.RunStopped`, a
`albert_tf.extras.MissingExtra`). In a notebook, training and evaluation show
a notebook progress bar (`albert_tf.progress`).

A flag that names a data file (`train_file`, `eval_file`, `predict_file`)
also takes a pandas DataFrame: it is written, as JSON lines, into the run's
folder (`<output_dir>/dataframes/`) and read from there as any file, its
columns named by the task's column options (`text_column=...`).

`load(path)` is a fine-tuned model folder (or its run's output folder) or an
export as a Python object: `.predict(inputs)` on raw text and `.keras_model`.
No function reads or changes absl's command-line flags.
"""

import hashlib
import os

# Flags that name a data file, which may be given as a DataFrame.
FILE_FLAGS = ("train_file", "eval_file", "predict_file")
DATAFRAME_DIR = "dataframes"


def _is_dataframe(value):
    return hasattr(value, "to_json") and hasattr(value, "columns")


def _dataframes_written(values):
    """`values` with each DataFrame of `FILE_FLAGS` replaced by the path of a JSON
    lines file of its rows in the run's folder (named by its content, so that a
    resumed run given the same frame finds the same file)."""
    frames = {k: v for k, v in values.items() if k in FILE_FLAGS and _is_dataframe(v)}
    if not frames or not values.get("output_dir"):  # (the command names a missing one)
        return values
    from albert_tf.io_utils import atomic_file

    folder = os.path.join(values["output_dir"], DATAFRAME_DIR)
    os.makedirs(folder, exist_ok=True)
    written = dict(values)
    for name, frame in frames.items():
        text = frame.to_json(orient="records", lines=True, force_ascii=False)
        if text and not text.endswith("\n"):
            text += "\n"
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
        path = os.path.join(folder, f"{name}-{digest}.jsonl")
        if not os.path.isfile(path):
            with atomic_file(path, "w", encoding="utf-8") as f:
                f.write(text)
        written[name] = path
    return written


def finetune(**flags):
    """`albert-tf finetune`: fine-tunes (or resumes) a run; returns its results
    (`eval_results.json`: each evaluated split's metrics, `train`, ...), or with
    `seeds`/`kfold` the summary over the runs. `metrics_fn` may be a function
    (`albert_tf.training.eval_extras`: `fn(outputs, labels) -> {name: number}`)."""
    from albert_tf.commands import finetune as program
    from albert_tf.training.eval_extras import metrics_fn_name

    if flags.get("metrics_fn") is not None:
        flags = {**flags, "metrics_fn": metrics_fn_name(flags["metrics_fn"])}
    return program.PROGRAM.call(_dataframes_written(flags))


def evaluate(**flags):
    """The evaluation of a fine-tuned model without training (`finetune` with
    `do_train=False`): `evaluate(output_dir="runs/rte")` scores a run's last
    checkpoint on its dev split(s) again; `evaluate(task="rte",
    init_checkpoint="runs/rte/model", data_dir=..., output_dir="runs/rte_eval")`
    a fine-tuned model folder (its head comes with it) in a new folder. Returns
    the results as `finetune` does."""
    if "do_train" in flags:
        raise ValueError("evaluate does not train: give no do_train (finetune trains)")
    return finetune(**{"do_eval": True, **flags, "do_train": False})


def load(path):
    """A fine-tuned model folder (or its run's output folder) or an export (a
    version folder or an export root) as a `albert_tf.predictor.Predictor`:
    `.predict(inputs)` on raw text, for every task type, `.input_names`,
    `.keras_model`."""
    from albert_tf.commands.predictor import Predictor

    return Predictor(path)


def predict(model, inputs=None, **flags):
    """`albert-tf predict`: the answers of `model` (a path as `load` takes, or what
    `load` returned) to `inputs`, one dict per row as the command prints them.

    inputs: a list of rows (each a dict naming the model's inputs or its
        trained columns, a tuple in the order of its `input_names`, or a str
        for a model of one input), one row, or a pandas DataFrame; None: the
        rows the command's flags give (`input=FILE`, `row=...`, `text_a=...`).
    flags: the command's other flags (`batch_size`, `raw`, `output`, ...).
    """
    from albert_tf.commands import predict as program

    predictor = model if isinstance(model, program.Predictor) else None
    if predictor is None and not isinstance(model, (str, os.PathLike)):
        raise TypeError(f"predict(model): model must be a path or what load() returned, got "
                        f"{type(model).__name__} {model!r:.60}")
    values = {"model": predictor.path if predictor else os.fspath(model), **flags}
    if inputs is None:
        return program.PROGRAM.call(values, echo=False, predictor=predictor)
    program.PROGRAM.settings(values)  # the flags checked as the command checks them
    extra = sorted(set(flags) - {"batch_size", "raw"})
    if extra:
        raise ValueError(f"predict: --{', --'.join(extra)} give rows or write them; with "
                         "inputs given, give only batch_size and raw")
    predictor = predictor or program.Predictor(values["model"])
    return predictor.predict(inputs, **flags)


def export(**flags):
    """`albert-tf export`: exports a fine-tuned model; returns `{"export_dir": the
    version folder written, "evaluation": the variants' metrics or None}`."""
    from albert_tf.commands import export as program

    return program.PROGRAM.call(flags)


def distill(**flags):
    """`albert-tf distill`: distils a fine-tuned teacher into a student; returns
    the student's results (with the teacher's under `teacher`)."""
    from albert_tf.commands import distill as program

    return program.PROGRAM.call(flags)


def pretrain(**flags):
    """`albert-tf pretrain`: pretrains (or resumes); returns `{"train": ...,
    "eval": ...}`."""
    from albert_tf.commands import pretrain as program

    return program.PROGRAM.call(flags)


def search(**flags):
    """`albert-tf search`: a hyperparameter search; returns `{"trials": [a row per
    trial, best first], "best": the best row or None, "files": [...]}`."""
    from albert_tf.commands import search as program

    return program.PROGRAM.call(flags)

