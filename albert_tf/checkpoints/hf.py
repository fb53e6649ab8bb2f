"""Hugging Face `transformers` ALBERT folders (`config.json` + weights).

Weights: `model.safetensors` (or its sharded index), else `pytorch_model.bin`
(or its sharded index), read without PyTorch by `torch_bin`.

Keys as `AlbertForPreTraining` saves them (`albert.embeddings.*`,
`albert.encoder.albert_layer_groups.{g}.albert_layers.{k}.*`, `predictions.*`,
`sop_classifier.*`), or as `AlbertModel` saves them (no `albert.` prefix).
PyTorch stores linear weights as (out, in): they are transposed here.
"""

import json
import os

import numpy as np
from safetensors.numpy import load_file, save_file

from albert_tf import config as config_lib
from albert_tf.checkpoints import torch_bin
from albert_tf.checkpoints.weights import (ATTENTION_PARTS, FFN_PARTS, CheckpointError, Entry,
                                           from_ours, group_layout_blocks)

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
BIN_FILE = "pytorch_model.bin"
BIN_INDEX_FILE = "pytorch_model.bin.index.json"
PREFIX = "albert."

_ATTENTION_KEYS = {"query": "attention.query", "key": "attention.key",
                   "value": "attention.value", "output": "attention.dense",
                   "layer_norm": "attention.LayerNorm"}
_FFN_KEYS = {"intermediate": "ffn", "output": "ffn_output",
             "layer_norm": "full_layer_layer_norm"}
_LEAF = {"kernel": ("weight", "transpose"), "bias": ("bias", "same"),
         "gamma": ("weight", "same"), "beta": ("bias", "same")}
# Buffers and tied copies that carry no weights of their own (`read` checks
# that the tied copies equal what they are tied to).
_TIED = {"predictions.decoder.weight": "embeddings.word_embeddings.weight",
         "predictions.decoder.bias": "predictions.bias"}
_DERIVED = ("embeddings.position_ids", "embeddings.token_type_ids", *_TIED)
_TASK_HEADS = ("classifier.", "qa_outputs.")


def _entry(name, module, leaf):
    key, layout = _LEAF[leaf]
    return Entry(name, f"{module}.{key}", layout)


def entries(config, heads):
    out = [
        Entry("embeddings/token_embedding/embeddings", "embeddings.word_embeddings.weight"),
        Entry("embeddings/segment_embedding/embeddings",
              "embeddings.token_type_embeddings.weight"),
        Entry("embeddings/position_embeddings", "embeddings.position_embeddings.weight"),
        _entry("embeddings/layer_norm/gamma", "embeddings.LayerNorm", "gamma"),
        _entry("embeddings/layer_norm/beta", "embeddings.LayerNorm", "beta"),
        _entry("embeddings/projection/kernel", "encoder.embedding_hidden_mapping_in", "kernel"),
        _entry("embeddings/projection/bias", "encoder.embedding_hidden_mapping_in", "bias"),
        _entry("pooler/kernel", "pooler", "kernel"),
        _entry("pooler/bias", "pooler", "bias"),
    ]
    for j, g, k in group_layout_blocks(config):
        prefix = f"encoder.albert_layer_groups.{g}.albert_layers.{k}"
        for parts, table, ours in ((ATTENTION_PARTS, _ATTENTION_KEYS, "attention"),
                                   (FFN_PARTS, _FFN_KEYS, "ffn")):
            for p in parts:
                sub, leaf = p.split("/")
                out.append(_entry(f"{ours}_{j}/{p}", f"{prefix}.{table[sub]}", leaf))
    if heads:
        out += [
            _entry("mlm_head/dense/kernel", "predictions.dense", "kernel"),
            _entry("mlm_head/dense/bias", "predictions.dense", "bias"),
            _entry("mlm_head/layer_norm/gamma", "predictions.LayerNorm", "gamma"),
            _entry("mlm_head/layer_norm/beta", "predictions.LayerNorm", "beta"),
            Entry("mlm_head/output_bias", "predictions.bias"),
            _entry("sop_head/dense/kernel", "sop_classifier.classifier", "kernel"),
            _entry("sop_head/dense/bias", "sop_classifier.classifier", "bias"),
        ]
    return out


# AlbertForSequenceClassification (and AlbertForMultipleChoice, one output) /
# AlbertForTokenClassification / AlbertForQuestionAnswering heads.
_CLASSIFIER = [_entry("classifier/kernel", "classifier", "kernel"),
               _entry("classifier/bias", "classifier", "bias")]
_HEAD_ENTRIES = {
    "classifier": _CLASSIFIER,
    "token_classifier": _CLASSIFIER,
    "span": [_entry("qa_outputs/kernel", "qa_outputs", "kernel"),
             _entry("qa_outputs/bias", "qa_outputs", "bias")],
}


def head_entries(kind):
    """The entries of a task head; none for a head Hugging Face has no class
    for (ALBERT's SQuAD 2.0 beam head): only the backbone loads then."""
    return _HEAD_ENTRIES.get(kind, [])


def skip(key, heads):
    if key in _DERIVED or key.startswith(_TASK_HEADS):
        return True
    return not heads and key.startswith(("predictions.", "sop_classifier."))


def is_hf_dir(path):
    config_path = os.path.join(path, CONFIG_FILE)
    if not os.path.isfile(config_path):
        return False
    try:
        values = config_lib.read_json(config_path)
    except ValueError:
        return False
    return isinstance(values, dict) and values.get("model_type") == "albert"


def _shards(path, index):
    with open(os.path.join(path, index), encoding="utf-8") as f:
        return [os.path.join(path, s) for s in sorted(set(json.load(f)["weight_map"].values()))]


def _weight_files(path):
    """The weight files of folder `path`: safetensors preferred, else PyTorch's."""
    for single, index in ((WEIGHTS_FILE, INDEX_FILE), (BIN_FILE, BIN_INDEX_FILE)):
        if os.path.isfile(os.path.join(path, single)):
            return [os.path.join(path, single)]
        if os.path.isfile(os.path.join(path, index)):
            return _shards(path, index)
    raise CheckpointError(f"{path}: no {WEIGHTS_FILE}, {INDEX_FILE}, {BIN_FILE} or "
                          f"{BIN_INDEX_FILE}")


def largest_tensor(config):
    """Elements of the largest tensor a checkpoint of `config` holds (a classifier
    of up to 1,024 labels counted), the bound on what a weight file may allocate."""
    return max(config.vocabulary_size * config.embedding_dim,
               config.max_sequence_length * config.embedding_dim,
               config.hidden_dim * max(config.intermediate_dim, config.hidden_dim,
                                       config.embedding_dim, 1024))


def _load(file, config):
    if file.endswith(".bin"):
        return torch_bin.read_state_dict(file, largest_tensor(config))
    try:
        return load_file(file)
    except Exception as e:  # safetensors raises its own error types
        raise CheckpointError(f"{file}: cannot read safetensors: {e}") from None


def _check_ties(tensors, path):
    """A tied copy (skipped when loading) must equal the tensor it is tied to."""
    for copy, original in _TIED.items():
        if copy in tensors and original in tensors and not np.array_equal(
                np.asarray(tensors[copy]), np.asarray(tensors[original])):
            raise CheckpointError(f"{path}: {copy} should be tied to {original} but differs "
                                  "from it; the checkpoint is inconsistent")


def read(path):
    config_path = os.path.join(path, CONFIG_FILE)
    config = config_lib.from_hf_json(config_lib.read_json(config_path), source=config_path)
    tensors = {}
    for file in _weight_files(path):
        for key, value in _load(file, config).items():
            tensors[key[len(PREFIX):] if key.startswith(PREFIX) else key] = value
    _check_ties(tensors, path)
    return config, tensors, path


def write(directory, config, arrays, heads):
    """Writes `arrays` (our name -> array) as a Hugging Face folder.

    With heads: `AlbertForPreTraining` keys (`albert.` prefix); without:
    `AlbertModel` keys.
    """
    architecture = "AlbertForPreTraining" if heads else "AlbertModel"
    values = config_lib.to_hf_json(config, architecture)  # raises for partial sharing
    prefix = PREFIX if heads else ""
    tensors = {}
    for e in entries(config, heads):
        key = e.key if e.key.startswith(("predictions.", "sop_classifier.")) else prefix + e.key
        tensors[key] = from_ours(np.asarray(arrays[e.name], np.float32), e.layout)
    with open(os.path.join(directory, CONFIG_FILE), "w", encoding="utf-8") as f:
        json.dump(values, f, indent=2, sort_keys=True)
    save_file(tensors, os.path.join(directory, WEIGHTS_FILE), metadata={"format": "pt"})
