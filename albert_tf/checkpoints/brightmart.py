"""brightmart/albert_zh's original TF1 releases (`albert_tiny`, `albert_base_zh`, ...).

A folder with `albert_config_<size>.json`, `albert_model.ckpt.index` /
`.data-*` and `vocab.txt`. The model is BERT-named and computes differently
from Google's (brightmart's `modeling.py` and `run_pretraining.py`), which
`AlbertConfig` describes as `embedding_projection="word"` (and
`normalize_first` for `ln_type` "preln"):

- `bert/embeddings/word_embeddings` (V x E) is projected by
  `bert/embeddings/word_embeddings_2` (E x H, no bias) before the H-wide
  `token_type_embeddings` and `position_embeddings` are added and
  `bert/embeddings/LayerNorm` is applied over H;
- one BERT layer, `bert/encoder/layer_shared/...`, serves every layer;
- the MLM transform `cls/predictions/transform/dense` is H -> H.

Its `*_google` releases use Google's names and math: `albert_tf.checkpoints`
reads them with the Google loader (told apart by `is_brightmart`).
"""

from albert_tf import config as config_lib
from albert_tf.checkpoints import google
from albert_tf.checkpoints.weights import CheckpointError, Entry

# The variable that only brightmart's layout has.
MARKER = "bert/embeddings/word_embeddings_2"
_LAYER = "bert/encoder/layer_shared"
_ATTENTION_KEYS = {
    "query": "attention/self/query", "key": "attention/self/key",
    "value": "attention/self/value", "output": "attention/output/dense",
    "layer_norm": "attention/output/LayerNorm",
}
_FFN_KEYS = {"intermediate": "intermediate/dense", "output": "output/dense",
             "layer_norm": "output/LayerNorm"}
_LEAVES = {"dense": ("kernel", "bias"), "norm": ("gamma", "beta")}


def is_brightmart(prefix):
    """Whether the TF1 checkpoint at `prefix` is in brightmart's own layout."""
    return MARKER in google.variable_names(prefix)


def _block(ours, table):
    out = []
    for sub, key in table.items():
        for leaf in _LEAVES["norm" if sub == "layer_norm" else "dense"]:
            out.append(Entry(f"{ours}/{sub}/{leaf}", f"{_LAYER}/{key}/{leaf}"))
    return out


def entries(config, heads):
    if config.sharing != "all" or config.num_groups != 1 or config.num_inner_repetitions != 1:
        raise CheckpointError("brightmart's layout stores one shared layer (layer_shared); "
                              "the model must have sharing='all' and one group of one block")
    out = [
        Entry("embeddings/token_embedding/embeddings", "bert/embeddings/word_embeddings"),
        Entry("embeddings/projection/kernel", MARKER),
        Entry("embeddings/segment_embedding/embeddings", "bert/embeddings/token_type_embeddings"),
        Entry("embeddings/position_embeddings", "bert/embeddings/position_embeddings"),
        Entry("embeddings/layer_norm/gamma", "bert/embeddings/LayerNorm/gamma"),
        Entry("embeddings/layer_norm/beta", "bert/embeddings/LayerNorm/beta"),
        Entry("pooler/kernel", "bert/pooler/dense/kernel"),
        Entry("pooler/bias", "bert/pooler/dense/bias"),
        *_block("attention_0", _ATTENTION_KEYS),
        *_block("ffn_0", _FFN_KEYS),
    ]
    if heads:
        # The MLM and SOP heads are named as Google's (both come from BERT).
        out += [e for e in google.entries(config, heads=True) if e.name.startswith(
            ("mlm_head/", "sop_head/"))]
    return out


def head_entries(kind):
    return google.head_entries(kind)  # the fine-tuning scripts name heads as Google's


def skip(key, heads):
    return google.skip(key, heads)


def read(path):
    """(AlbertConfig, {name: array}, prefix) from a folder or a checkpoint prefix."""
    config_path, prefix = google.locate(path)
    values = config_lib.read_json(config_path)
    config = config_lib.from_brightmart_json(values, source=config_path)
    return config, google.read_tensors(prefix), prefix
