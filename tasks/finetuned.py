"""Fine-tuned model folders: loading one back with its task and tokenizer, and exporting it.

This is where a model folder meets the task registry: the library's exporter
(`albert_tf.export.exporter`) writes any serving module and knows no task;
the task builds its own module (`Task.serving_module`).
"""

import os

from albert_tf import tasks
from albert_tf import checkpoints, lora, model_card
from albert_tf.backbone import AlbertBackbone
from albert_tf.checkpoints import native
from albert_tf.checkpoints.weights import assign
from albert_tf.export import exporter, precision
from albert_tf.export import formats as formats_lib
from albert_tf.export.settings import ExportSettings
from albert_tf.tokenizer.loading import load_tokenizer
from albert_tf.training.run_folder import EXPORT_DIR, MODEL_DIR
from albert_tf.training.settings import FinetuneSettings


class Finetuned:
    """A fine-tuned model folder, read once: its task (bound to its settings), its
    settings and its weights (a LoRA folder's adapters merged into the kernels),
    from which `model` builds the task model in any precision.

    `model_dir` is the `model/` folder a fine-tuning run writes: albert_tf's
    format with the task head, the run's settings and its vocabulary.
    """

    def __init__(self, model_dir):
        self.model_dir = model_dir
        self.meta = _finetuned_metadata(model_dir)
        self.settings = FinetuneSettings.from_dict(self.meta["settings"],
                                                   f"{model_dir}: settings")
        self.task = tasks.get(self.meta["task"]).bind(self.settings)
        checkpoint = checkpoints.read_checkpoint(model_dir)
        if "lora" in self.meta:
            checkpoint = checkpoint._replace(tensors=_merged_lora_tensors(self, checkpoint))
        self.checkpoint = checkpoint

    def model(self, compute="fp32"):
        """The task model computing in `compute` ("fp32" or "bf16"), its weights
        those read (cast as each layer runs)."""
        with precision.compute_in(compute):
            model = self.task.build_model(AlbertBackbone(self.checkpoint.config),
                                          self.settings, self.meta.get("head"))
        if not checkpoints.load_task_weights(model, self.checkpoint):
            raise ValueError(f"{self.model_dir}: holds no {model.head_kind} head for task "
                             f"{self.task.name!r}")
        return model

    def tokenizer(self, host=True):
        """The folder's vocabulary: the host tokenizer, or the in-graph one (`host=False`)."""
        return load_tokenizer(self.model_dir, host=host)

    def serving_module(self, export_options=None, compute="fp32", tokenizer=None):
        """`(module, info)`: the task's serving module and its description.

        export_options: the task's validated export options (`task.export_options`).
        tokenizer: the in-graph tokenizer (loaded from the folder when None).
        """
        module, info = self.task.serving_module(
            self.model(compute), tokenizer or self.tokenizer(host=False), self.settings,
            self.model_dir, export_options)
        return module, {"task": self.task.name, "max_seq_length": self.settings.max_seq_length,
                        "model_dir": os.path.abspath(self.model_dir),
                        "windows": module.text_windows(), **info}


def load_finetuned(model_dir, host=True):
    """(task, settings, model, tokenizer) of a fine-tuned model folder (`Finetuned`);
    the task is bound to the settings (`Task.bind`).

    host: the host tokenizer (featurization); False: the in-graph one (serving).
    """
    folder = Finetuned(model_dir)
    return folder.task, folder.settings, folder.model(), folder.tokenizer(host)


def _finetuned_metadata(model_dir):
    meta = native.read_metadata(model_dir)
    if "task" not in meta or "settings" not in meta:
        raise ValueError(f"{model_dir}: not a fine-tuned model (no task in "
                         f"{native.CONFIG_FILE}); its heads: {meta.get('heads')}")
    return meta


def _merged_lora_tensors(folder, checkpoint):
    """The weights of a LoRA folder (adapters and head beside a backbone
    reference, see `albert_tf.lora`) as a plain model's: the adapters merged
    into the kernels."""
    meta, settings, task = folder.meta, folder.settings, folder.task
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
    return lora.merged_arrays(model)


def build_serving_module(model_dir, **export_options):
    """`(module, info)`: the task's serving module of a fine-tuned folder (or its
    run's output folder) and its description, in float32.

    export_options: options the task's export takes (its `export_options_class`'s
    fields, e.g. SQuAD v2.0's `null_threshold`); a None value means "not given".
    """
    folder = Finetuned(exporter.resolve_model_dir(model_dir))
    return folder.serving_module(folder.task.export_options(export_options))


def run_export(settings):
    """Exports a fine-tuned model as `settings` (an `ExportSettings`) say.

    Returns `{"export_dir": the version folder written, "evaluation": what
    `settings.eval_data` measured of each variant (see SERVING.md), or None}`.
    Every mistake in the settings, the data or the task options is raised
    before the long work; nothing is left behind on failure. The model folder
    is read once; the SavedModel of another compute precision is built from
    those weights.
    """
    from albert_tf.tasks import export_data

    settings.check_files()
    version, target = exporter.check_version(settings.export_dir, settings.version)
    folder = Finetuned(exporter.resolve_model_dir(settings.model_dir))
    options = folder.task.export_options(settings.task_options)
    names = settings.format_names()
    calibrated = [entry for entry in settings.format_entries() if entry.calibrated]
    data = export_data.TaskData(
        folder, settings.eval_data, settings.eval_split, settings.eval_examples,
        calibration=bool(calibrated), calibration_split=settings.calibration_split,
        calibration_examples=settings.calibration_examples) if settings.eval_data else None
    # (the data read first: its mistakes before any work)
    chosen = precision.choose(settings.precision)
    tokenizer = folder.tokenizer(host=False)
    module, info = folder.serving_module(options, tokenizer=tokenizer)
    saved_module = None
    if precision.needs_timing(chosen):  # `auto`: the export's own candidates, timed
        saved_module, _ = folder.serving_module(options, "bf16", tokenizer)
        chosen = precision.timed_choice(chosen, {"fp32": module, "bf16": saved_module},
                                        folder.settings.max_seq_length)
        saved_module = saved_module if chosen["compute"] == "bf16" else None
    elif chosen["compute"] != "fp32":
        saved_module, _ = folder.serving_module(options, chosen["compute"], tokenizer)
    info.update(version=version, precision=chosen)
    target = exporter.write_export(
        module, info, target, names, format_options=settings.format_options,
        saved_module=saved_module,
        model_dir=folder.model_dir, representative=data and data.calibration(module.input_names),
        evaluate=data and data.evaluate(module.input_names), renumber=settings.version is None)
    # The model card of the folder (`README.md`): this export's variants and their sizes.
    written = [e for e in formats_lib.chosen(names) if e.described(info) is not None]
    model_card.add_export(folder.model_dir, target,
                          {e.spelling: os.path.join(target, e.path) for e in written})
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
