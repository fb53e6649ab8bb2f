"""keras-hub `AlbertBackbone` presets (`config.json` + `model.weights.h5`).

Read through keras-hub itself, so that whatever its weight file layout is,
the weights are the ones keras-hub would use. Its attention kernels are
stored per head, (H, heads, head_dim): reshaped to our (H, H).
"""

import os

from albert_tf import extras
from albert_tf.checkpoints.weights import ATTENTION_PARTS, FFN_PARTS, CheckpointError, Entry
from albert_tf.config import AlbertConfig
from albert_tf.io_utils import read_json

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"

_ATTENTION_KEYS = {"query": "self_attention_layer/query", "key": "self_attention_layer/key",
                   "value": "self_attention_layer/value",
                   "output": "self_attention_layer/attention_output",
                   "layer_norm": "self_attention_layer_norm"}
_FFN_KEYS = {"intermediate": "feedforward_intermediate_dense",
             "output": "feedforward_output_dense", "layer_norm": "feedforward_layer_norm"}
_SAME_NAMES = ("vocabulary_size", "num_layers", "num_heads", "num_groups",
               "num_inner_repetitions", "embedding_dim", "hidden_dim", "intermediate_dim",
               "max_sequence_length", "num_segments")


def entries(config, heads):
    if heads:
        raise CheckpointError("keras-hub AlbertBackbone presets carry no MLM/SOP heads; "
                              "load with with_heads=False")
    out = [
        Entry("embeddings/token_embedding/embeddings", "token_embedding/embeddings"),
        Entry("embeddings/segment_embedding/embeddings", "segment_embedding/embeddings"),
        Entry("embeddings/position_embeddings", "position_embedding/embeddings"),
        Entry("embeddings/layer_norm/gamma", "embeddings_layer_norm/gamma"),
        Entry("embeddings/layer_norm/beta", "embeddings_layer_norm/beta"),
        Entry("embeddings/projection/kernel", "embedding_projection/kernel"),
        Entry("embeddings/projection/bias", "embedding_projection/bias"),
        Entry("pooler/kernel", "pooled_dense/kernel"),
        Entry("pooler/bias", "pooled_dense/bias"),
    ]
    inner = config.num_inner_repetitions
    for g in range(config.num_groups):
        for k in range(inner):
            j, prefix = g * inner + k, f"group_{g}_inner_layer_{k}"
            for p in ATTENTION_PARTS:
                sub, leaf = p.split("/")
                out.append(Entry(f"attention_{j}/{p}", f"{prefix}/{_ATTENTION_KEYS[sub]}/{leaf}",
                                 "reshape"))
            for p in FFN_PARTS:
                sub, leaf = p.split("/")
                out.append(Entry(f"ffn_{j}/{p}", f"{prefix}/{_FFN_KEYS[sub]}/{leaf}"))
    return out


def head_entries(kind):
    return []  # AlbertBackbone presets hold no task heads


def skip(key, heads):
    return False


def is_preset_dir(path):
    config_path = os.path.join(path, CONFIG_FILE)
    if not os.path.isfile(config_path):
        return False
    try:
        values = read_json(config_path)
    except ValueError:
        return False
    return isinstance(values, dict) and values.get("class_name") == "AlbertBackbone"


def read(path):
    config_path = os.path.join(path, CONFIG_FILE)
    try:
        values = read_json(config_path)["config"]
        config = AlbertConfig(**{k: values[k] for k in _SAME_NAMES},
                              dropout=float(values.get("dropout", 0.0)),
                              attention_dropout=float(values.get("dropout", 0.0)))
    except KeyError as e:
        raise CheckpointError(f"{config_path}: missing field {e.args[0]!r}") from None
    except ValueError as e:
        raise CheckpointError(f"{config_path}: {e}") from None
    # Imported here: slow, and only this format needs it.
    keras_hub = extras.load("keras-hub", f"{path}: reading a keras-hub preset")

    try:
        backbone = keras_hub.models.AlbertBackbone.from_preset(path)
    except Exception as e:  # keras-hub raises many error types for bad presets
        raise CheckpointError(f"{path}: keras-hub could not load the preset: {e}") from None
    tensors = {v.path: v.numpy() for v in backbone.weights}
    return config, tensors, path
