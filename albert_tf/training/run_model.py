"""The model of a fine-tuning run: its vocabulary, its config, the task model
built (pretrained or from random weights), and the fine-tuned model folder.

`finetuning.Run` uses these to make its model; `save_finetuned` writes what
`tasks.finetuned.load_finetuned` reads back.
"""

import logging
import os

from albert_tf import checkpoints, lora
from albert_tf.backbone import AlbertBackbone
from albert_tf.checkpoints.download import is_published_name
from albert_tf.checkpoints.weights import CheckpointError
from albert_tf.config import AlbertConfig, preset_names
from albert_tf.tokenizer.loading import load_tokenizer
from albert_tf.training.settings import DEFAULT_MODEL

log = logging.getLogger(__name__)


def run_tokenizer(settings):
    """The host tokenizer of a run: `--vocab_file`, else the checkpoint's own vocabulary."""
    if settings.vocab_file:
        if not os.path.isfile(settings.vocab_file):
            raise FileNotFoundError(f"--vocab_file: no such file {settings.vocab_file}")
        return load_tokenizer(settings.vocab_file, host=True)
    if settings.init_checkpoint:
        try:
            return load_tokenizer(settings.init_checkpoint, host=True)
        except FileNotFoundError as e:  # (a folder that does not exist says so as this flag)
            raise FileNotFoundError(f"--init_checkpoint={settings.init_checkpoint}: {e}") \
                from None
        except CheckpointError as e:  # a name not fetched (its message starts with it)
            raise CheckpointError(f"--init_checkpoint: {e}") from None
    raise ValueError("no vocabulary: pass --vocab_file (or an --init_checkpoint that ships one)")


def read_init_checkpoint(settings):
    """The `Checkpoint` of `--init_checkpoint` (a published name fetched into the
    cache), or None; what cannot be read is one line naming the flag."""
    if not settings.init_checkpoint:
        return None
    try:
        return checkpoints.read_checkpoint(settings.init_checkpoint)
    except CheckpointError as e:  # (its message starts with the path or name)
        raise CheckpointError(f"--init_checkpoint: {e}") from None
    except FileNotFoundError as e:
        raise FileNotFoundError(f"--init_checkpoint={settings.init_checkpoint}: {e}") from None


def model_config(settings, checkpoint, vocabulary_size):
    """`(config, problem)`: the model's `AlbertConfig` (the checkpoint's, or
    `settings.model`, a preset or a config file: one rule for both, a model
    from random weights has its embeddings sized to the tokenizer's
    vocabulary) and what is wrong, or None."""
    model = settings.model or DEFAULT_MODEL
    if checkpoint is not None:
        config, source = checkpoint.config, checkpoint.source
    elif model in preset_names():
        config, source = AlbertConfig.preset(model, vocabulary_size=vocabulary_size), model
    elif not os.path.isfile(model):
        pretrained = (f"; {model} is a published checkpoint: pass --init_checkpoint={model}"
                      if is_published_name(model) else "")
        raise FileNotFoundError(f"--model={model}: not a model preset "
                                f"({', '.join(preset_names())}) nor a config file{pretrained}")
    else:
        config = AlbertConfig.from_json_file(model).replace(vocabulary_size=vocabulary_size)
        source = model
    problem = None
    if config.vocabulary_size != vocabulary_size:
        problem = (f"the model ({source}) has a vocabulary of {config.vocabulary_size}, the "
                   f"tokenizer {vocabulary_size} (pass the model's own --vocab_file)")
    return config, problem


def build_model(task, settings, policy, config, checkpoint, head=None, warn_random=True):
    """The task model: pretrained (backbone, and head if the checkpoint has one)
    from `checkpoint`, or randomly initialised from `config`; `head`: a
    saved head config to build the head from (see `Task.build_model`);
    `warn_random`: False to say nothing of a model from random weights (a run
    resumed from its checkpoint; a run that starts from scratch on purpose)."""
    config = config.replace(dropout=settings.dropout, attention_dropout=settings.dropout)
    backbone = AlbertBackbone(config, dtype=policy, recompute=settings.recompute,
                              unroll=settings.layer_execution == "unrolled")
    model = task.build_model(backbone, settings, head)
    if checkpoint is None:
        if warn_random:
            # `finetune` resolves a run without a checkpoint with the from-scratch
            # recipe (configs/finetune_recipes.json), not the fine-tuning one.
            log.warning(
                "no --init_checkpoint: training %s from a random initialisation; fine-tuning "
                "recipes are meant for pretrained weights, this run uses learning_rate=%g, "
                "warmup_steps=%d, train_steps=%d, dropout=%g (finetune's from-scratch recipe "
                "for what is not given)", settings.model or DEFAULT_MODEL,
                settings.learning_rate, settings.warmup_steps, settings.train_steps,
                settings.dropout)
    elif checkpoints.load_task_weights(model, checkpoint):
        log.info("%s: loaded the fine-tuned %s head too", checkpoint.source,
                     model.head_kind)
    if settings.lora_rank:  # after the pretrained weights: they are what LoRA freezes
        lora.enable_lora(backbone, settings.lora_rank, settings.lora_alpha)
    return model


def save_finetuned(model, task, settings, directory, tokenizer, extra=None):
    """Writes a fine-tuned model folder (what `tasks.finetuned.load_finetuned` reads):
    the weights with the task head, the task, the run's settings (a
    `FinetuneSettings`), the tokenizer's vocabulary, `extra` metadata and the
    data files the task keeps (`Task.model_files`).

    A LoRA model's folder holds only what was trained (the adapters and the
    head) and, under `lora`, the `lora.Adapters` record naming the frozen
    backbone checkpoint (made absolute: the folder may be used elsewhere)."""
    extra = {**(extra or {}), "task": task.name, "head": model.head_config(),
             "settings": settings.to_dict()}
    weights = None
    if lora.lora_enabled(model.backbone):
        backbone = settings.init_checkpoint
        if os.path.exists(backbone):
            backbone = os.path.abspath(backbone)
        extra["lora"] = lora.Adapters(settings.lora_rank, settings.lora_alpha or
                                      settings.lora_rank, backbone).to_dict()
        weights = lora.trained_arrays(model)
    return checkpoints.save_pretrained(model, directory, extra=extra, tokenizer=tokenizer,
                                       weights=weights, files=task.model_files(settings))
