"""Fine-tuned model folders: loading one back with its task and tokenizer, and exporting it.

This is where a model folder meets the task registry: the library's exporter
(`albert_tf.export.exporter`) writes any serving module and knows no task;
the task builds its own module (`Task.serving_module`).
"""

import os

import tasks
from albert_tf import checkpoints, lora
from albert_tf.backbone import AlbertBackbone
from albert_tf.checkpoints import native
from albert_tf.checkpoints.weights import assign
from albert_tf.export import exporter
from albert_tf.tokenizer.loading import load_tokenizer
from albert_tf.training.run_folder import EXPORT_DIR, MODEL_DIR
from albert_tf.training.settings import FinetuneSettings


def load_finetuned(model_dir, host=True):
    """(task, settings, model, tokenizer) of a fine-tuned model folder; the task is
    bound to the settings (`Task.bind`).

    `model_dir` is the `model/` folder a fine-tuning run writes: albert_tf's
    format with the task head, the run's settings and its vocabulary.
    host: the host tokenizer (featurization); False: the in-graph one (serving).
    """
    meta = native.read_metadata(model_dir)
    if "task" not in meta or "settings" not in meta:
        raise ValueError(f"{model_dir}: not a fine-tuned model (no task in "
                         f"{native.CONFIG_FILE}); its heads: {meta.get('heads')}")
    settings = FinetuneSettings.from_dict(meta["settings"], f"{model_dir}: settings")
    task = tasks.get(meta["task"]).bind(settings)
    tokenizer = load_tokenizer(model_dir, host=host)
    checkpoint = checkpoints.read_checkpoint(model_dir)
    if "lora" in meta:
        return task, settings, _merged_lora_model(task, settings, meta, checkpoint), tokenizer
    model = task.build_model(AlbertBackbone(checkpoint.config), settings, meta.get("head"))
    if not checkpoints.load_task_weights(model, checkpoint):
        raise ValueError(f"{model_dir}: holds no {model.head_kind} head for task {task.name!r}")
    return task, settings, model, tokenizer


def _merged_lora_model(task, settings, meta, checkpoint):
    """The task model of a LoRA folder (adapters and head beside a backbone
    reference, see `albert_tf.lora`), with its adapters merged into the kernels."""
    config, tensors, model_dir = checkpoint.config, checkpoint.tensors, checkpoint.source
    adapters = lora.Adapters.from_dict(meta["lora"], os.path.join(model_dir, native.CONFIG_FILE))
    try:
        backbone = checkpoints.read_checkpoint(adapters.backbone)
    except (OSError, ValueError) as e:
        first_line = str(e).splitlines()[0]
        raise ValueError(f"{model_dir}: its LoRA adapters adapt the backbone checkpoint "
                         f"{adapters.backbone}, which cannot be read ({first_line}); put that "
                         "checkpoint back where it was") from None
    model = task.build_model(AlbertBackbone(config), settings, meta.get("head"))
    checkpoints.load_task_weights(model, backbone)
    lora.enable_lora(model.backbone, adapters.rank, adapters.alpha)
    trained = {v.path for v in model.trainable_variables}
    assign(model, tensors, native.entries_for(tensors), model_dir, only=trained.__contains__)
    merged = lora.merged_arrays(model)
    plain = task.build_model(AlbertBackbone(config), settings, meta.get("head"))
    assign(plain, merged, native.entries_for(merged), model_dir)
    return plain


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
