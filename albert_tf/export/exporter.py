"""Exporting a fine-tuned `model/` folder as a versioned SavedModel (and TFLite).

`<export_dir>/<version>/` is the layout TF Serving watches: it serves the
highest numeric version and ignores other names, such as the temporary folder
an export is built in (renamed into place only once complete).
"""

import json
import os

import tensorflow as tf

from albert_tf import checkpoints
from albert_tf.checkpoints import native
from albert_tf.export import INFO_FILE, TFLITE_FILE
from albert_tf.export import tflite as tflite_lib
from albert_tf.export.classification import ClassifierServing
from albert_tf.export.squad import SquadServing
from albert_tf.io_utils import atomic_directory, atomic_file
from albert_tf.tokenizer import AlbertTokenizer
from albert_tf.training.finetuning import MODEL_DIR, RESULTS_FILE
from tasks.classification import GlueTask
from tasks.finetuned import load_finetuned
from tasks.squad import SquadTask

EXPORT_DIR = "export"  # a fine-tuning run's exports: <output_dir>/export/<version>


def resolve_model_dir(path):
    """The fine-tuned `model/` folder: `path` itself, or `path/model` (a run's output)."""
    for candidate in (path, os.path.join(path, MODEL_DIR)):
        if native.is_native_dir(candidate):
            return candidate
    raise FileNotFoundError(f"{path}: not a fine-tuned model folder (no {native.CONFIG_FILE} "
                            f"in it or in {os.path.join(path, MODEL_DIR)})")


def versions(export_dir):
    """The numeric version folders of `export_dir`, ascending (ints)."""
    if not os.path.isdir(export_dir):
        return []
    return sorted(int(name) for name in os.listdir(export_dir)
                  if name.isdigit() and os.path.isdir(os.path.join(export_dir, name)))


def next_version(export_dir):
    """1 + the highest existing version (1 for a new folder)."""
    existing = versions(export_dir)
    return existing[-1] + 1 if existing else 1


def heldout_threshold(model_dir):
    """`(threshold, source)` for SQuAD v2.0: the run's held-out threshold from the
    `eval_results.json` beside `model_dir`, else `(0.0, "default 0")`."""
    path = os.path.join(os.path.dirname(os.path.abspath(model_dir)), RESULTS_FILE)
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            dev = json.load(f).get("dev", {})
        if dev.get("threshold_source") == "held-out training questions":
            return float(dev["threshold"]), f"held-out training questions ({path})"
    return 0.0, "default 0"


def build_serving_module(model_dir, null_threshold=None):
    """`(module, info)`: the serving module of a fine-tuned folder and its description.

    null_threshold: SQuAD v2.0's no-answer threshold; None: `heldout_threshold`.
    """
    model_dir = resolve_model_dir(model_dir)
    task, settings, model, _ = load_finetuned(model_dir)
    if null_threshold is not None and not (isinstance(task, SquadTask) and task.v2):
        raise ValueError(f"a no-answer threshold applies to squad_v2 only, not to task "
                         f"{task.name!r}")
    tokenizer = AlbertTokenizer(os.path.join(model_dir, checkpoints.SPM_FILE))
    info = {"task": task.name, "max_seq_length": settings.max_seq_length,
            "model_dir": os.path.abspath(model_dir)}
    if isinstance(task, GlueTask):
        pair = task.spec.labelled.text_b is not None
        module = ClassifierServing(model, tokenizer, settings.max_seq_length,
                                   task.spec.labels, pair)
        info.update(inputs=["text_a", "text_b"] if pair else ["text"], labels=task.spec.labels)
    elif isinstance(task, SquadTask):
        options = task.options(settings)
        threshold, source = (float(null_threshold), "given") if null_threshold is not None \
            else heldout_threshold(model_dir)
        head = "v2" if task.head(settings) == "albert_v2" else "span"
        module = SquadServing(model, tokenizer, settings.max_seq_length, options, head,
                              task.v2, threshold)
        info.update(inputs=["question", "context"], head=head, doc_stride=options.doc_stride,
                    max_query_length=options.max_query_length,
                    max_answer_length=options.max_answer_length)
        if task.v2:
            info.update(null_threshold=threshold, null_threshold_source=source)
    else:
        raise ValueError(f"{model_dir}: task {task.name!r} has no serving export")
    return module, info


def save_module(module, info, path):
    """Writes the SavedModel of `module` (and its description) into folder `path`."""
    tf.saved_model.save(module, path, signatures=module.signatures())
    os.makedirs(os.path.dirname(os.path.join(path, INFO_FILE)), exist_ok=True)
    with atomic_file(os.path.join(path, INFO_FILE), encoding="utf-8") as f:
        json.dump(info, f, indent=2, sort_keys=True)


def export_model(model_dir, export_dir, version=None, tflite=False, quantize=False,
                 null_threshold=None):
    """Exports a fine-tuned model for serving; returns the version folder.

    Args:
        model_dir: a fine-tuned `model/` folder, or a run's output folder holding one.
        export_dir: the export root; writes `<export_dir>/<version>/`.
        version: a positive int; None: `next_version(export_dir)`. An existing
            version is never overwritten (TF Serving may be serving it).
        tflite: also write `model.tflite` (the `encoded` signature at
            `max_seq_length`); quantize: with dynamic-range int8 weights
            (implies tflite).
        null_threshold: SQuAD v2.0's no-answer threshold (see `heldout_threshold`).

    The folder appears complete or not at all: it is built beside its final
    place and renamed at the end.
    """
    version = next_version(export_dir) if version is None else version
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"version must be a positive integer, got {version!r}")
    target = os.path.join(export_dir, str(version))
    if os.path.exists(target):
        raise FileExistsError(f"{target} already exists; choose another --version")
    module, info = build_serving_module(model_dir, null_threshold)
    info["version"] = version
    with atomic_directory(target, overwrite=False) as tmp:
        if tflite or quantize:
            info["tflite"] = tflite_lib.write(module, os.path.join(tmp, TFLITE_FILE), quantize)
        save_module(module, info, tmp)
    return target


def export_run(output_dir, **kwargs):
    """Exports a fine-tuning run's model to `<output_dir>/export/<next version>`
    (`python -m albert_tf.finetune --export`); returns the version folder."""
    return export_model(os.path.join(output_dir, MODEL_DIR), os.path.join(output_dir, EXPORT_DIR),
                        **kwargs)
