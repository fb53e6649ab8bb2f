"""Google's original TF1 ALBERT checkpoints (google-research/albert).

A folder with `albert_config.json` and a name-based TF1 checkpoint
(`model.ckpt-best.index` + `.data-*`), variables named as in the reference
`modeling.py`: `bert/embeddings/...`, `bert/encoder/transformer/group_{g}/
inner_group_{k}/...`, `cls/predictions/...`, `cls/seq_relationship/...`.
"""

import glob
import os
import re

import tensorflow as tf

from albert_tf import config as config_lib
from albert_tf.checkpoints.weights import (ATTENTION_PARTS, FFN_PARTS, CheckpointError, Entry,
                                           group_layout_blocks)

CONFIG_FILE = "albert_config.json"

_ATTENTION_KEYS = {
    "query": "attention_1/self/query", "key": "attention_1/self/key",
    "value": "attention_1/self/value", "output": "attention_1/output/dense",
    "layer_norm": "LayerNorm",
}
_FFN_KEYS = {
    "intermediate": "ffn_1/intermediate/dense", "output": "ffn_1/intermediate/output/dense",
    "layer_norm": "LayerNorm_1",
}
# Training state and optimizer slots that a checkpoint may carry.
_TRAINING_STATE = re.compile(
    r"(^global_step$|^good_steps$|loss_scale|/(adam_[mv]|Adam(_1)?|lamb_[mv]|Momentum)$)")
# Task heads of fine-tuned checkpoints: outside the pretraining model.
_TASK_HEADS = re.compile(
    r"^(output_weights|output_bias|cls/squad/|cls/classifier/|start_logits/|end_logits/"
    r"|answer_class/)")


def _keyed(part, table):
    sub, leaf = part.split("/")
    return f"{table[sub]}/{leaf}"


def entries(config, heads):
    out = [
        Entry("embeddings/token_embedding/embeddings", "bert/embeddings/word_embeddings"),
        Entry("embeddings/segment_embedding/embeddings", "bert/embeddings/token_type_embeddings"),
        Entry("embeddings/position_embeddings", "bert/embeddings/position_embeddings"),
        Entry("embeddings/layer_norm/gamma", "bert/embeddings/LayerNorm/gamma"),
        Entry("embeddings/layer_norm/beta", "bert/embeddings/LayerNorm/beta"),
        Entry("embeddings/projection/kernel", "bert/encoder/embedding_hidden_mapping_in/kernel"),
        Entry("embeddings/projection/bias", "bert/encoder/embedding_hidden_mapping_in/bias"),
        Entry("pooler/kernel", "bert/pooler/dense/kernel"),
        Entry("pooler/bias", "bert/pooler/dense/bias"),
    ]
    for j, g, k in group_layout_blocks(config):
        prefix = f"bert/encoder/transformer/group_{g}/inner_group_{k}"
        out += [Entry(f"attention_{j}/{p}", f"{prefix}/{_keyed(p, _ATTENTION_KEYS)}")
                for p in ATTENTION_PARTS]
        out += [Entry(f"ffn_{j}/{p}", f"{prefix}/{_keyed(p, _FFN_KEYS)}") for p in FFN_PARTS]
    if heads:
        out += [
            Entry("mlm_head/dense/kernel", "cls/predictions/transform/dense/kernel"),
            Entry("mlm_head/dense/bias", "cls/predictions/transform/dense/bias"),
            Entry("mlm_head/layer_norm/gamma", "cls/predictions/transform/LayerNorm/gamma"),
            Entry("mlm_head/layer_norm/beta", "cls/predictions/transform/LayerNorm/beta"),
            Entry("mlm_head/output_bias", "cls/predictions/output_bias"),
            Entry("sop_head/dense/kernel", "cls/seq_relationship/output_weights", "transpose"),
            Entry("sop_head/dense/bias", "cls/seq_relationship/output_bias"),
        ]
    return out


# Task heads of the reference's fine-tuning scripts (run_classifier.py,
# run_squad_v1.py, run_squad_v2.py), by the kind of head they are.
_HEAD_ENTRIES = {
    "classifier": [Entry("classifier/kernel", "output_weights", "transpose"),
                   Entry("classifier/bias", "output_bias")],
    "span": [Entry("qa_outputs/kernel", "cls/squad/output_weights", "transpose"),
             Entry("qa_outputs/bias", "cls/squad/output_bias")],
    "beam": [
        Entry("start_dense/kernel", "start_logits/dense/kernel"),
        Entry("start_dense/bias", "start_logits/dense/bias"),
        Entry("end_dense_0/kernel", "end_logits/dense_0/kernel"),
        Entry("end_dense_0/bias", "end_logits/dense_0/bias"),
        Entry("end_layer_norm/gamma", "end_logits/LayerNorm/gamma"),
        Entry("end_layer_norm/beta", "end_logits/LayerNorm/beta"),
        Entry("end_dense_1/kernel", "end_logits/dense_1/kernel"),
        Entry("end_dense_1/bias", "end_logits/dense_1/bias"),
        Entry("answer_dense_0/kernel", "answer_class/dense_0/kernel"),
        Entry("answer_dense_0/bias", "answer_class/dense_0/bias"),
        Entry("answer_dense_1/kernel", "answer_class/dense_1/kernel"),
    ],
}


def head_entries(kind):
    """The entries of a task head; none for a head Google's scripts never
    trained (token classification): only the backbone loads then."""
    return _HEAD_ENTRIES.get(kind, [])


def skip(key, heads):
    """Source names deliberately not loaded: training state, other heads."""
    if _TRAINING_STATE.search(key) or _TASK_HEADS.search(key):
        return True
    return not heads and key.startswith("cls/")


def find_config(folder):
    """The config file of a TF1 checkpoint folder, or None.

    Google's releases name it `albert_config.json`; brightmart/albert_zh's
    `albert_config_<size>.json` (also for its Google-layout `*_google` ones).
    """
    exact = os.path.join(folder, CONFIG_FILE)
    if os.path.isfile(exact):
        return exact
    named = sorted(glob.glob(os.path.join(folder, "albert_config*.json")))
    return named[0] if len(named) == 1 else None


def is_checkpoint_dir(path):
    return find_config(path) is not None and bool(_index_files(path))


def _index_files(path):
    # Any TF1 prefix: model.ckpt, model.ckpt-best (albert_*_zh), albert_model.ckpt.
    return sorted(glob.glob(os.path.join(path, "*.ckpt*.index")))


def checkpoint_prefix(path):
    """The TF1 checkpoint prefix inside folder `path`."""
    latest = tf.train.latest_checkpoint(path)
    if latest:
        return latest
    indexes = _index_files(path)
    if len(indexes) == 1:
        return indexes[0][: -len(".index")]
    if not indexes:
        raise CheckpointError(f"{path}: no TF1 checkpoint (*.ckpt*.index) found beside "
                              f"{CONFIG_FILE}")
    raise CheckpointError(
        f"{path}: several checkpoints {[os.path.basename(i) for i in indexes]} and no "
        "'checkpoint' file naming one; pass the prefix of the one you want "
        "(e.g. .../model.ckpt-best)")


def locate(path):
    """(config file, checkpoint prefix) of a TF1 folder or prefix."""
    if os.path.isdir(path):
        folder, prefix = path, checkpoint_prefix(path)
    else:
        folder, prefix = os.path.dirname(path), path
    config_path = find_config(folder)
    if config_path is None:
        raise CheckpointError(f"{folder}: no {CONFIG_FILE} (or one albert_config*.json) beside "
                              f"the checkpoint {prefix}")
    return config_path, prefix


def variable_names(prefix):
    try:
        return set(tf.train.load_checkpoint(prefix).get_variable_to_shape_map())
    except (tf.errors.OpError, ValueError) as e:
        raise CheckpointError(f"{prefix}: cannot read TF1 checkpoint: {e}") from None


def read_tensors(prefix):
    """{name: array} of a TF1 checkpoint, without training state."""
    try:
        reader = tf.train.load_checkpoint(prefix)
    except (tf.errors.OpError, ValueError) as e:
        raise CheckpointError(f"{prefix}: cannot read TF1 checkpoint: {e}") from None
    names = reader.get_variable_to_shape_map()
    # Optimizer slots can be as large as the model: never read them.
    return {n: reader.get_tensor(n) for n in names if not _TRAINING_STATE.search(n)}


def read(path):
    """(AlbertConfig, {name: array}, prefix) from a folder or a checkpoint prefix."""
    config_path, prefix = locate(path)
    config = config_lib.from_google_json(config_lib.read_json(config_path), source=config_path)
    return config, read_tensors(prefix), prefix
