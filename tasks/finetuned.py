"""Fine-tuned model folders: loading one back with its task and tokenizer, and exporting it.

This is where a model folder meets the task registry: the library's exporter
(`albert_tf.export.exporter`) writes any serving module and knows no task;
the task builds its own module (`Task.serving_module`).
"""

import os

import tasks
from albert_tf import checkpoints
from albert_tf.backbone import AlbertBackbone
from albert_tf.checkpoints import native
from albert_tf.export import exporter
from albert_tf.checkpoints import load_tokenizer
from albert_tf.training.run_folder import EXPORT_DIR, MODEL_DIR
from albert_tf.training.settings import FinetuneSettings


def load_finetuned(model_dir, host=True):
    """(task, settings, model, tokenizer) of a fine-tuned model folder.

    `model_dir` is the `model/` folder a fine-tuning run writes: albert_tf's
    format with the task head, the run's settings and its vocabulary.
    host: the host tokenizer (featurization); False: the in-graph one (serving).
    """
    meta = native.read_metadata(model_dir)
    if "task" not in meta or "settings" not in meta:
        raise ValueError(f"{model_dir}: not a fine-tuned model (no task in "
                         f"{native.CONFIG_FILE}); its heads: {meta.get('heads')}")
    task = tasks.get(meta["task"])
    settings = FinetuneSettings.from_dict(meta["settings"], f"{model_dir}: settings")
    tokenizer = load_tokenizer(model_dir, host=host)
    checkpoint = checkpoints.read_checkpoint(model_dir)
    model = task.build_model(AlbertBackbone(checkpoint[1]), settings, meta.get("head"))
    if not checkpoints.load_task_weights(model, checkpoint):
        raise ValueError(f"{model_dir}: holds no {model.head_kind} head for task {task.name!r}")
    return task, settings, model, tokenizer


def build_serving_module(model_dir, **export_options):
    """`(module, info)`: the task's serving module of a fine-tuned folder and its description.

    export_options: options the task's export takes (e.g. SQuAD v2.0's
    `null_threshold`); a None value means "not given".
    """
    model_dir = exporter.resolve_model_dir(model_dir)
    task, settings, model, tokenizer = load_finetuned(model_dir, host=False)
    given = {k: v for k, v in export_options.items() if v is not None}
    module, info = task.serving_module(model, tokenizer, settings, model_dir, given)
    return module, {"task": task.name, "max_seq_length": settings.max_seq_length,
                    "model_dir": os.path.abspath(model_dir), **info}


def export_model(model_dir, export_dir, version=None, tflite=False, quantize=False,
                 **export_options):
    """Exports a fine-tuned model for serving; returns the version folder.

    Args:
        model_dir: a fine-tuned `model/` folder, or a run's output folder holding one.
        export_dir: the export root; writes `<export_dir>/<version>/`.
        version: a positive int; None: one more than the highest there. An
            existing version is never overwritten (TF Serving may be serving it).
        tflite, quantize: see `albert_tf.export.exporter.write_export`.
        export_options: the task's own (see `build_serving_module`).
    """
    version, target = exporter.check_version(export_dir, version)
    module, info = build_serving_module(model_dir, **export_options)
    info["version"] = version
    return exporter.write_export(module, info, target, tflite, quantize,
                                 renumber=version is None)


def export_run(output_dir, **kwargs):
    """Exports a fine-tuning run's model to `<output_dir>/export/<next version>`
    (`python -m albert_tf.finetune --export`); returns the version folder."""
    return export_model(os.path.join(output_dir, MODEL_DIR),
                        os.path.join(output_dir, EXPORT_DIR), **kwargs)
