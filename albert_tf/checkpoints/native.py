"""albert_tf's own format: our config and our variable names, as safetensors.

`albert_tf_config.json` holds `{"format": "albert_tf", "version": 1, "model":
<AlbertConfig fields>, "heads": [...]}`; `model.safetensors` holds every
weight under its Keras variable path (e.g. `attention_0/query/kernel`).
Every sharing mode can be stored, unlike the group-only Google/HF layouts.
"""

import json
import os

import numpy as np
from safetensors.numpy import load_file, save_file

from albert_tf.checkpoints.weights import CheckpointError, Entry
from albert_tf.config import AlbertConfig
from albert_tf.io_utils import read_json

CONFIG_FILE = "albert_tf_config.json"
WEIGHTS_FILE = "model.safetensors"
FORMAT_VERSION = 1


def is_native_dir(path):
    return os.path.isfile(os.path.join(path, CONFIG_FILE))


def read_metadata(path):
    config_path = os.path.join(path, CONFIG_FILE)
    meta = read_json(config_path)
    if meta.get("format") != "albert_tf" or meta.get("version") != FORMAT_VERSION:
        raise CheckpointError(f"{config_path}: expected format 'albert_tf' version "
                              f"{FORMAT_VERSION}, got {meta.get('format')!r} "
                              f"version {meta.get('version')!r}")
    if "model" not in meta:
        raise CheckpointError(f"{config_path}: missing field 'model'")
    return meta


def read(path):
    meta = read_metadata(path)
    config = AlbertConfig.from_dict(meta["model"], source=os.path.join(path, CONFIG_FILE))
    weights = os.path.join(path, WEIGHTS_FILE)
    try:
        tensors = load_file(weights)
    except Exception as e:  # safetensors raises its own error types
        raise CheckpointError(f"{weights}: cannot read safetensors: {e}") from None
    return config, tensors, path


def entries_for(tensors):
    return [Entry(name, name) for name in tensors]


def write(directory, config, arrays, heads, extra=None):
    meta = {"format": "albert_tf", "version": FORMAT_VERSION, "model": config.to_dict(),
            "heads": sorted(heads), **(extra or {})}
    with open(os.path.join(directory, CONFIG_FILE), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
    save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()},
              os.path.join(directory, WEIGHTS_FILE), metadata={"format": "albert_tf"})
