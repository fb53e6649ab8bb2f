"""Loading and saving ALBERT weights in every format people have.

`load_pretrained(path)` recognises the format of `path`:

| format | files |
|---|---|
| albert_tf | `albert_tf_config.json`, `model.safetensors` |
| Google TF1 | `albert_config.json`, `*.ckpt*.index` / `.data-*` (folder or prefix) |
| brightmart | `albert_config_*.json`, `albert_model.ckpt.*` with `word_embeddings_2` |
| Hugging Face | `config.json` (model_type "albert"), `model.safetensors` or `pytorch_model.bin` |
| keras-hub | `config.json` (class_name "AlbertBackbone"), `model.weights.h5` |

`path` may also name a published checkpoint (see `albert_tf.checkpoints.download`).
"""

import logging
import os
import re
import shutil
import typing

import numpy as np

from albert_tf.backbone import AlbertBackbone
from albert_tf.checkpoints import brightmart, download, google, hf, keras_hub, native
from albert_tf.checkpoints.weights import CheckpointError, assign, model_variables
from albert_tf.io_utils import atomic_directory
from albert_tf.models.pretraining import AlbertPretrainingModel
from albert_tf.tokenizer.base import save_vocabulary

log = logging.getLogger(__name__)

__all__ = ["Checkpoint", "CheckpointError", "detect_format", "export_hf", "init_from_group0",
           "load_pretrained", "load_task_weights", "load_weights", "read_checkpoint",
           "save_pretrained"]

_FORMATS = {"albert_tf": native, "google": google, "brightmart": brightmart, "hf": hf,
            "keras_hub": keras_hub}
_BACKBONE_PREFIXES = ("embeddings/", "attention_", "ffn_", "pooler/")


def detect_format(path):
    """The format name of a local checkpoint folder (or TF1 prefix)."""
    if os.path.isdir(path):
        if native.is_native_dir(path):
            return "albert_tf"
        if google.is_checkpoint_dir(path):
            return _tf1_layout(google.checkpoint_prefix(path))
        if hf.is_hf_dir(path):
            return "hf"
        if keras_hub.is_preset_dir(path):
            return "keras_hub"
        raise CheckpointError(
            f"{path}: not a known checkpoint folder. Expected one of: albert_tf "
            f"({native.CONFIG_FILE}), Google TF1 or brightmart ({google.CONFIG_FILE} or "
            "albert_config_*.json + *.ckpt*.index), "
            f"Hugging Face ({hf.CONFIG_FILE} with model_type 'albert' + {hf.WEIGHTS_FILE} or "
            f"{hf.BIN_FILE}), "
            f"keras-hub ({keras_hub.CONFIG_FILE} with class_name 'AlbertBackbone' + "
            f"{keras_hub.WEIGHTS_FILE}). Found: {sorted(os.listdir(path))[:20]}")
    if os.path.isfile(path + ".index") and google.find_config(os.path.dirname(path) or "."):
        return _tf1_layout(path)
    raise CheckpointError(f"{path}: no such checkpoint folder or TF1 checkpoint prefix")


def _tf1_layout(prefix):
    """A TF1 checkpoint is brightmart's own layout or Google's, by its variables."""
    return "brightmart" if brightmart.is_brightmart(prefix) else "google"


class Checkpoint(typing.NamedTuple):
    """A checkpoint read into memory (`read_checkpoint`).

    format: its layout, a key of `_FORMATS` ("albert_tf", "google", "brightmart",
        "hf", "keras_hub"); config: its `AlbertConfig`; tensors: `{name: array}`
        under the layout's own names; source: the local path read (errors name it).
    """

    format: str
    config: object
    tensors: dict
    source: str


def read_checkpoint(path):
    """The `Checkpoint` of any supported checkpoint (a folder, a TF1 prefix or a
    published name)."""
    path = download.resolve(path)
    fmt = detect_format(path)
    config, tensors, source = _FORMATS[fmt].read(path)
    return Checkpoint(fmt, config, tensors, source)


def _entries_and_skip(fmt, config, tensors, heads):
    if fmt == "albert_tf":
        return (native.entries_for(tensors),
                lambda key: not key.startswith(_BACKBONE_PREFIXES))
    module = _FORMATS[fmt]
    return module.entries(config, heads), lambda key: module.skip(key, heads)


def load_weights(model, fmt, config, tensors, source, heads):
    """Assigns source tensors to `model` strictly; logs what was skipped."""
    entries, skip = _entries_and_skip(fmt, config, tensors, heads)
    skipped = assign(model, tensors, entries, source, skip)
    if skipped:
        log.info("%s: not loaded (training state or other heads): %s", source,
                     ", ".join(skipped[:8]) + (" ..." if len(skipped) > 8 else ""))


def load_pretrained(path, with_heads=False, dtype=None, overrides=None, recompute=False,
                    unroll=False, sentence_task="sop"):
    """Loads an ALBERT checkpoint of any supported format.

    Args:
        path: a checkpoint folder (any format above), a TF1 checkpoint prefix,
            or a published checkpoint name (`albert_tf.checkpoints.download`).
        with_heads: also load the pretraining heads (MLM and SOP) and return
            an `AlbertPretrainingModel`; otherwise the heads are skipped.
        dtype: a Keras dtype policy name for the model, e.g. "mixed_bfloat16".
        overrides: AlbertConfig fields to change that do not change the
            weights' shapes, e.g. `{"dropout": 0.1}` for fine-tuning.
        recompute: recompute the encoder's layers in the backward pass (see
            `AlbertBackbone`).
        unroll: run the encoder's layers unrolled (see `AlbertBackbone`).
        sentence_task: with `with_heads`, the task the sentence head goes on
            training on ("sop" or "nsp"), which names its metrics.

    Returns:
        An `AlbertBackbone`, or an `AlbertPretrainingModel` with `with_heads`.

    Raises:
        CheckpointError: unknown format, or tensors missing, unexpected or
            mis-shaped (all listed).
    """
    checkpoint = read_checkpoint(path)
    config = checkpoint.config.replace(**overrides) if overrides else checkpoint.config
    model = AlbertBackbone(config, dtype=dtype, recompute=recompute, unroll=unroll)
    if with_heads:
        model = AlbertPretrainingModel(model, sentence_task=sentence_task)
    load_weights(model, checkpoint.format, config, checkpoint.tensors, checkpoint.source,
                 with_heads)
    return model


def _is_backbone(name):
    return name.startswith(_BACKBONE_PREFIXES)


def load_task_weights(model, checkpoint):
    """Loads a read checkpoint into a task model (with `backbone` and `head_kind`).

    The backbone is loaded strictly; the task head too when the checkpoint
    has one (a fine-tuned checkpoint), else it keeps its initialisation (a
    pretrained checkpoint). Returns whether the head was loaded.
    """
    fmt, config, tensors, source = (checkpoint.format, checkpoint.config, checkpoint.tensors,
                                    checkpoint.source)
    if fmt == "albert_tf" and any(k.endswith("/lora_kernel_a") for k in tensors):
        raise CheckpointError(
            f"{source}: holds LoRA adapters and a head beside a reference to its backbone, not "
            "a whole model (a fine-tuned LoRA folder loads for predict, export and distill; "
            "to train again, start from its backbone checkpoint)")
    if fmt == "albert_tf":
        entries = [e for e in native.entries_for(tensors) if _is_backbone(e.name)]
        head = native.entries_for(n for n in model_variables(model) if not _is_backbone(n))
        skip = lambda key: not _is_backbone(key)  # noqa: E731 (other models' heads)
    else:
        module = _FORMATS[fmt]
        entries = module.entries(config, heads=False)
        head = module.head_entries(model.head_kind)
        skip = lambda key: module.skip(key, heads=False)  # noqa: E731
    has_head = any(e.key in tensors for e in head)
    assign(model, tensors, entries + head, source, skip,
           only=None if has_head else _is_backbone)
    return has_head


def _source_model(checkpoint, heads):
    model = AlbertBackbone(checkpoint.config)
    if heads:
        model = AlbertPretrainingModel(model)
    load_weights(model, checkpoint.format, checkpoint.config, checkpoint.tensors,
                 checkpoint.source, heads)
    return model


def _has_pretraining_heads(checkpoint):
    fmt, config, tensors = checkpoint.format, checkpoint.config, checkpoint.tensors
    if fmt == "albert_tf":
        return any(k.startswith("mlm_head/") for k in tensors)
    if fmt == "keras_hub":
        return False
    backbone = {e.key for e in _FORMATS[fmt].entries(config, heads=False)}
    return any(e.key in tensors for e in _FORMATS[fmt].entries(config, heads=True)
               if e.key not in backbone)


def init_from_group0(model, path):
    """Initialises every layer group of `model` from group 0 of a checkpoint.

    The reference's `init_from_group0`, for growing a model: a checkpoint
    with one group (or fewer layers) initialises a model with more groups or
    layers. Module `j` of `model` takes the checkpoint's module
    `j mod num_inner_repetitions` (group 0's blocks, in order); embeddings,
    pooler and pretraining heads (when both have them) are taken as they are.
    """
    checkpoint = read_checkpoint(path)
    source_config = checkpoint.config
    if source_config.num_inner_repetitions != model.config.num_inner_repetitions:
        raise CheckpointError(
            f"{checkpoint.source}: num_inner_repetitions={source_config.num_inner_repetitions}, "
            f"the model has {model.config.num_inner_repetitions}; group 0 cannot fill it")
    heads = isinstance(model, AlbertPretrainingModel) and _has_pretraining_heads(checkpoint)
    source = model_variables(_source_model(checkpoint, heads))
    inner = source_config.num_inner_repetitions
    problems = []
    for name, variable in model_variables(model).items():
        if not heads and name.startswith(("mlm_head/", "sop_head/")):
            continue  # kept as initialised
        match = re.match(r"^(attention|ffn)_(\d+)/(.*)$", name)
        wanted = f"{match[1]}_{int(match[2]) % inner}/{match[3]}" if match else name
        if wanted not in source or tuple(source[wanted].shape) != tuple(variable.shape):
            got = tuple(source[wanted].shape) if wanted in source else "missing"
            problems.append(f"{name} from {wanted}: {got} vs {tuple(variable.shape)}")
            continue
        variable.assign(source[wanted].numpy())
    if problems:
        raise CheckpointError(f"{checkpoint.source} cannot initialise the model from group 0:\n  "
                              + "\n  ".join(problems[:12]))


def _arrays(model):
    return {name: np.asarray(v.numpy(), np.float32) for name, v in model_variables(model).items()}


def _heads_of(model):
    if isinstance(model, AlbertPretrainingModel):
        return ["mlm", "sop"]
    if isinstance(model, AlbertBackbone):
        return []
    if hasattr(model, "backbone") and hasattr(model, "head_config"):
        return ["task"]
    raise TypeError(f"expected an ALBERT backbone, pretraining or task model, "
                    f"got {type(model).__name__}")


def save_pretrained(model, directory, extra=None, tokenizer=None, weights=None, files=()):
    """Saves `model` in albert_tf's format, atomically (all or nothing).

    Args:
        model: a backbone, pretraining model or task model.
        extra: JSON-able metadata stored in the config file (e.g. the task).
        tokenizer: the model's tokenizer (either form); its vocabulary is
            shipped in the folder and recorded in the config, so that the
            folder is all a user needs (`albert_tf.load_tokenizer(directory)`).
        weights: `{name: array}` to save instead of all of `model`'s (a LoRA
            model's adapters and head, see `albert_tf.lora`).
        files: paths of files copied into the folder under their own names.
    """
    heads = _heads_of(model)
    with atomic_directory(directory) as tmp:
        for path in files:
            shutil.copyfile(path, os.path.join(tmp, os.path.basename(path)))
        extra = dict(extra or {})
        if tokenizer is not None:
            extra["vocabulary"] = save_vocabulary(tokenizer, tmp)
        native.write(tmp, model.config, _arrays(model) if weights is None else weights, heads,
                     extra)
    return directory


def export_hf(model, directory):
    """Writes a Hugging Face folder that `transformers` loads.

    `AlbertForPreTraining` when the model has its heads, else `AlbertModel`.
    Only block-shared layouts exist there: sharing "attention"/"ffn" raises.
    """
    heads = bool(_heads_of(model))
    with atomic_directory(directory) as tmp:
        hf.write(tmp, model.config, _arrays(model), heads)
    return directory
