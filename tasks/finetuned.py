"""Fine-tuned model folders: loading one back with its task and tokenizer, and exporting it.

This is where a model folder meets the task registry: the library's exporter
(`albert_tf.export.exporter`) writes any serving module and knows no task;
the task builds its own module (`Task.serving_module`).
"""

import os

from albert_tf import tasks
from albert_tf import checkpoints, lora
from albert_tf.backbone import AlbertBackbone
from albert_tf.checkpoints import native
from albert_tf.checkpoints.weights import assign
from albert_tf.export import exporter, formats, precision
from albert_tf.export.settings import ExportSettings
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
    meta = _finetuned_metadata(model_dir)
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


def _finetuned_metadata(model_dir):
    meta = native.read_metadata(model_dir)
    if "task" not in meta or "settings" not in meta:
        raise ValueError(f"{model_dir}: not a fine-tuned model (no task in "
                         f"{native.CONFIG_FILE}); its heads: {meta.get('heads')}")
    return meta


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

    export_options: options the task's export takes (its `export_options_class`'s
    fields, e.g. SQuAD v2.0's `null_threshold`); a None value means "not given".
    """
    model_dir = exporter.resolve_model_dir(model_dir)
    task, settings, model, tokenizer = load_finetuned(model_dir, host=False)
    options = task.export_options(export_options)
    module, info = task.serving_module(model, tokenizer, settings, model_dir, options)
    return module, {"task": task.name, "max_seq_length": settings.max_seq_length,
                    "model_dir": os.path.abspath(model_dir), **info}


def run_export(settings):
    """Exports a fine-tuned model as `settings` (an `ExportSettings`) say.

    Returns `{"export_dir": the version folder written, "evaluation": what
    `settings.eval_data` measured of each variant (see SERVING.md), or None}`.
    Every mistake in the settings, the data or the task options is raised
    before the long work; nothing is left behind on failure.
    """
    from albert_tf.tasks import export_data

    settings.check_files()
    version, target = exporter.check_version(settings.export_dir, settings.version)
    model_dir = exporter.resolve_model_dir(settings.model_dir)
    # The task's options checked now, from the folder's record alone.
    tasks.get(_finetuned_metadata(model_dir)["task"]).export_options(settings.task_options)
    names = settings.format_names()
    calibrated = [entry.name for entry in formats.chosen(names) if entry.calibrated]
    data = export_data.TaskData(
        model_dir, settings.eval_data, settings.eval_split, settings.eval_examples,
        calibration=bool(calibrated), calibration_split=settings.calibration_split,
        calibration_examples=settings.calibration_examples) if settings.eval_data else None
    # (the data read first: its mistakes before any work)
    chosen = precision.choose(settings.precision)
    module, info = build_serving_module(model_dir, **settings.task_options)
    saved_module = None
    if chosen["compute"] != "fp32":
        with precision.compute_in(chosen["compute"]):
            saved_module, _ = build_serving_module(model_dir, **settings.task_options)
    info.update(version=version, precision=chosen)
    target = exporter.write_export(
        module, info, target, names, settings=settings, saved_module=saved_module,
        model_dir=model_dir, representative=data and data.calibration(module.input_names),
        evaluate=data and data.evaluate(module.input_names), renumber=settings.version is None)
    return {"export_dir": target, "evaluation": info.get("evaluation")}


def export_model(model_dir, export_dir, version=None, tflite=False, quantize=False,
                 **export_options):
    """Exports a fine-tuned model for serving, in float32; returns the version folder.

    Args:
        model_dir: a fine-tuned `model/` folder, or a run's output folder holding one.
        export_dir: the export root; writes `<export_dir>/<version>/`.
        version: a positive int; None: one more than the highest there. An
            existing version is never overwritten (TF Serving may be serving it).
        tflite, quantize: also write model.tflite (quantized); see `ExportSettings`.
        export_options: the task's own (see `build_serving_module`).
    """
    settings = ExportSettings(model_dir=model_dir, export_dir=export_dir, version=version,
                              precision="fp32", tflite=tflite, quantize=quantize,
                              task_options=export_options)
    return run_export(settings)["export_dir"]


def export_run(output_dir, **kwargs):
    """Exports a fine-tuning run's model to `<output_dir>/export/<next version>`
    (`python -m albert_tf.finetune --export`); returns the version folder."""
    return export_model(os.path.join(output_dir, MODEL_DIR),
                        os.path.join(output_dir, EXPORT_DIR), **kwargs)
