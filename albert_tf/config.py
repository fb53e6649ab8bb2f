"""`AlbertConfig`: the model's hyper-parameters, in keras-hub's vocabulary.

Google's `albert_config.json` and Hugging Face's `config.json` use other
names for the same things; each is translated here, in one function pair:
`from_google_json` / `to_google_json` and `from_hf_json` / `to_hf_json`;
brightmart/albert_zh's `albert_config_*.json` is read by `from_brightmart_json`
(nothing writes it).
"""

import dataclasses
import os

from albert_tf.io_utils import read_json

SHARING_MODES = ("all", "attention", "ffn", "none")
ACTIVATIONS = ("gelu_approximate", "gelu", "relu")
EMBEDDING_PROJECTIONS = ("summed", "word")

# The presets and recipes: `configs/` of the repository, installed as `albert_tf/configs`
# (a link to it in the checkout).
CONFIGS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs")
_PRESET_DIR = os.path.join(CONFIGS_DIR, "models")


@dataclasses.dataclass(frozen=True)
class AlbertConfig:
    """Hyper-parameters of an ALBERT model.

    Weight sharing (Lan et al. 2020, Section 3.1 and Table 4): the encoder has
    `num_layers` layers split into `num_groups` contiguous groups; layer `l`
    belongs to group `l * num_groups // num_layers` (Google's
    `num_hidden_groups`). Each layer applies `num_inner_repetitions` blocks in
    order (Google's `inner_group_num`). `sharing` says which sub-layers the
    layers of one group share: `"all"` (ALBERT), `"attention"` (attention
    shared, feed-forward per layer), `"ffn"` (feed-forward shared, attention
    per layer) or `"none"` (BERT-like, every layer its own weights).

    Two variants released Chinese checkpoints use (brightmart/albert_zh):
    `embedding_projection` says what the E -> H projection is applied to:
    `"summed"` (Google, Hugging Face: word, segment and position embeddings
    of size E are summed, LayerNorm over E, then a dense E -> H with bias) or
    `"word"` (brightmart: only the word embedding is of size E, projected
    by an E -> H matrix without bias; segment and position embeddings are of
    size H, LayerNorm over H; the MLM head's transform is then H -> H and
    its logits go back through the projection before the tied word
    embeddings). `normalize_first` (keras-hub's name): pre-LayerNorm blocks,
    `x + f(LayerNorm(x))` (brightmart's `ln_type` "preln"), instead of
    post-LayerNorm `LayerNorm(x + f(x))`.
    """

    vocabulary_size: int = 30000
    num_layers: int = 12
    num_heads: int = 12
    hidden_dim: int = 768
    intermediate_dim: int = 3072
    embedding_dim: int = 128
    num_groups: int = 1
    num_inner_repetitions: int = 1
    sharing: str = "all"
    dropout: float = 0.0
    attention_dropout: float = 0.0
    max_sequence_length: int = 512
    num_segments: int = 2
    activation: str = "gelu_approximate"
    layer_norm_epsilon: float = 1e-12
    initializer_range: float = 0.02
    embedding_projection: str = "summed"
    normalize_first: bool = False

    def __post_init__(self):
        for name in ("vocabulary_size", "num_layers", "num_heads", "hidden_dim",
                     "intermediate_dim", "embedding_dim", "num_groups",
                     "num_inner_repetitions", "max_sequence_length", "num_segments"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"AlbertConfig.{name} must be a positive integer, got {value!r}")
        for name in ("dropout", "attention_dropout"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                raise ValueError(f"AlbertConfig.{name} must be in [0, 1), got {value!r}")
        for name in ("layer_norm_epsilon", "initializer_range"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"AlbertConfig.{name} must be a positive number, got {value!r}")
        if self.hidden_dim % self.num_heads:
            raise ValueError(
                f"AlbertConfig.hidden_dim={self.hidden_dim} must be divisible by "
                f"num_heads={self.num_heads}")
        if self.num_layers % self.num_groups:
            raise ValueError(
                f"AlbertConfig.num_layers={self.num_layers} must be divisible by "
                f"num_groups={self.num_groups}")
        if self.sharing not in SHARING_MODES:
            raise ValueError(
                f"AlbertConfig.sharing must be one of {SHARING_MODES}, got {self.sharing!r}")
        if self.sharing == "none" and self.num_groups != 1:
            raise ValueError(
                f"AlbertConfig.num_groups={self.num_groups} has no effect with "
                "sharing='none' (every layer has its own weights); use num_groups=1")
        if self.activation not in ACTIVATIONS:
            raise ValueError(
                f"AlbertConfig.activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if self.embedding_projection not in EMBEDDING_PROJECTIONS:
            raise ValueError(
                f"AlbertConfig.embedding_projection must be one of {EMBEDDING_PROJECTIONS}, "
                f"got {self.embedding_projection!r}")
        if not isinstance(self.normalize_first, bool):
            raise ValueError(
                f"AlbertConfig.normalize_first must be true or false, got {self.normalize_first!r}")

    @property
    def head_dim(self):
        return self.hidden_dim // self.num_heads

    def length_problem(self, max_seq_length):
        """What is wrong with running this model on sequences of `max_seq_length`
        (more than its positions), said as a run's flag; None when nothing is."""
        if max_seq_length <= self.max_sequence_length:
            return None
        return (f"--max_seq_length={max_seq_length} is more than the model's "
                f"{self.max_sequence_length} positions")

    def replace(self, **changes):
        """A copy with `changes` applied (validated like a new config)."""
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(self)})
        if unknown:
            raise ValueError(f"AlbertConfig has no field(s) {unknown}")
        return dataclasses.replace(self, **changes)

    # Our own JSON: field names exactly as above, unknown keys rejected.

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values, source="config"):
        if not isinstance(values, dict):
            raise ValueError(f"{source}: expected a JSON object, got {type(values).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"{source}: unknown AlbertConfig field(s) {unknown}; "
                             f"known fields are {sorted(known)}")
        try:
            return cls(**values)
        except ValueError as e:
            raise ValueError(f"{source}: {e}") from None

    @classmethod
    def from_json_file(cls, path):
        return cls.from_dict(read_json(path), source=path)

    @classmethod
    def preset(cls, name, **overrides):
        """A named preset from `configs/models/<name>.json` (e.g. `albert_base`)."""
        path = os.path.join(_PRESET_DIR, f"{name}.json")
        if not os.path.exists(path):
            raise ValueError(f"unknown model preset {name!r}; known presets: {preset_names()}")
        config = cls.from_json_file(path)
        return config.replace(**overrides) if overrides else config


def preset_names():
    return sorted(f[:-5] for f in os.listdir(_PRESET_DIR) if f.endswith(".json"))


def _grouped_layout(config, format_name):
    """`num_hidden_groups` of a config in the group-only layout of Google/HF.

    Those formats can only share whole blocks within a group, so `"none"`
    sharing is written as one group per layer (it reads back as `"all"` with
    `num_groups == num_layers`, the same model), and `"attention"`/`"ffn"`
    sharing cannot be written at all.
    """
    if config.sharing == "all":
        return config.num_groups
    if config.sharing == "none":
        return config.num_layers
    raise ValueError(
        f"sharing={config.sharing!r} cannot be written in the {format_name} format, "
        "which shares whole transformer blocks only; save with "
        "albert_tf.save_pretrained instead")


def _check_supported(values, source, unsupported):
    for key, default in unsupported.items():
        if key in values and values[key] not in default:
            raise ValueError(f"{source}: {key}={values[key]!r} is not supported "
                             f"(supported: {list(default)})")


# Google's `albert_config.json` and Hugging Face's `config.json` share BERT's
# field names; they differ in what "gelu" means (Google: the tanh
# approximation; Hugging Face: exact erf, "gelu_new" being the approximation)
# and in the extras each adds.
_GOOGLE_ACTIVATIONS = {"gelu": "gelu_approximate", "relu": "relu"}
_GOOGLE_UNSUPPORTED = {"net_structure_type": (0,), "gap_size": (0,), "num_memory_blocks": (0,),
                       "down_scale_factor": (1, 1.0), "layers_to_keep": ([],)}
_HF_ACTIVATIONS = {"gelu_new": "gelu_approximate", "gelu_pytorch_tanh": "gelu_approximate",
                   "gelu": "gelu", "relu": "relu"}
_HF_UNSUPPORTED = {"position_embedding_type": ("absolute",)}


def _from_bert_names(values, source, activations, default_activation, unsupported):
    """AlbertConfig from a dict with BERT-style field names."""
    _check_supported(values, source, unsupported)
    act = values.get("hidden_act", default_activation)
    if act not in activations:
        raise ValueError(f"{source}: hidden_act={act!r} is not supported "
                         f"(supported: {sorted(activations)})")
    try:
        return AlbertConfig(
            vocabulary_size=values["vocab_size"],
            num_layers=values["num_hidden_layers"],
            num_heads=values["num_attention_heads"],
            hidden_dim=values["hidden_size"],
            intermediate_dim=values["intermediate_size"],
            embedding_dim=values.get("embedding_size", 128),
            num_groups=values.get("num_hidden_groups", 1),
            num_inner_repetitions=values.get("inner_group_num", 1),
            dropout=float(values.get("hidden_dropout_prob", 0.0)),
            attention_dropout=float(values.get("attention_probs_dropout_prob", 0.0)),
            max_sequence_length=values.get("max_position_embeddings", 512),
            num_segments=values.get("type_vocab_size", 2),
            activation=activations[act],
            layer_norm_epsilon=values.get("layer_norm_eps", 1e-12),
            initializer_range=values.get("initializer_range", 0.02),
        )
    except KeyError as e:
        raise ValueError(f"{source}: missing required field {e.args[0]!r}") from None
    except ValueError as e:
        raise ValueError(f"{source}: {e}") from None


def _check_standard_variant(config, format_name):
    """Google's and Hugging Face's ALBERT have neither brightmart variant."""
    if config.embedding_projection != "summed":
        raise ValueError(
            f"embedding_projection={config.embedding_projection!r} (brightmart's embedding "
            f"layout) cannot be written in the {format_name} format, whose model projects the "
            "summed embeddings; save with albert_tf.save_pretrained instead")
    if config.normalize_first:
        raise ValueError(
            f"normalize_first=True (pre-LayerNorm blocks) cannot be written in the {format_name} "
            "format, whose blocks are post-LayerNorm; save with albert_tf.save_pretrained instead")


def _to_bert_names(config, format_name, activations):
    """The BERT-style fields of `config` (`activations`: ours -> theirs)."""
    _check_standard_variant(config, format_name)
    return {
        "vocab_size": config.vocabulary_size,
        "embedding_size": config.embedding_dim,
        "hidden_size": config.hidden_dim,
        "num_hidden_layers": config.num_layers,
        "num_hidden_groups": _grouped_layout(config, format_name),
        "inner_group_num": config.num_inner_repetitions,
        "num_attention_heads": config.num_heads,
        "intermediate_size": config.intermediate_dim,
        "hidden_act": activations[config.activation],
        "hidden_dropout_prob": config.dropout,
        "attention_probs_dropout_prob": config.attention_dropout,
        "max_position_embeddings": config.max_sequence_length,
        "type_vocab_size": config.num_segments,
        "initializer_range": config.initializer_range,
    }


def from_google_json(values, source="albert_config.json"):
    """AlbertConfig from the dict of Google's `albert_config.json`."""
    return _from_bert_names(values, source, _GOOGLE_ACTIVATIONS, "gelu", _GOOGLE_UNSUPPORTED)


def to_google_json(config):
    if config.activation == "gelu":
        raise ValueError("activation='gelu' (exact) has no name in Google's albert_config.json, "
                         "whose 'gelu' is the tanh approximation")
    return {**_to_bert_names(config, "Google TF1", {"gelu_approximate": "gelu", "relu": "relu"}),
            "down_scale_factor": 1, "gap_size": 0, "net_structure_type": 0,
            "layers_to_keep": []}


def from_hf_json(values, source="config.json"):
    """AlbertConfig from the dict of a Hugging Face ALBERT `config.json`."""
    if values.get("model_type", "albert") != "albert":
        raise ValueError(f"{source}: model_type={values['model_type']!r}, expected 'albert'")
    return _from_bert_names(values, source, _HF_ACTIVATIONS, "gelu_new", _HF_UNSUPPORTED)


def to_hf_json(config, architecture="AlbertForPreTraining"):
    activations = {"gelu_approximate": "gelu_new", "gelu": "gelu", "relu": "relu"}
    return {"architectures": [architecture], "model_type": "albert",
            **_to_bert_names(config, "Hugging Face", activations),
            "layer_norm_eps": config.layer_norm_epsilon, "position_embedding_type": "absolute",
            "pad_token_id": 0, "bos_token_id": 2, "eos_token_id": 3}


# brightmart/albert_zh's `albert_config_*.json`: BERT's names plus `ln_type`
# ("postln", or "preln" for pre-LayerNorm blocks; absent means postln), no
# group fields (one shared layer), and "gelu" the tanh approximation (its
# `modeling.py` copies BERT's). Its `pooler_*` and `directionality` fields are
# BERT's unused leftovers.
_BRIGHTMART_LN_TYPES = {"postln": False, None: False, "preln": True}
_BRIGHTMART_UNSUPPORTED = {"num_hidden_groups": (1,), "inner_group_num": (1,)}


def from_brightmart_json(values, source="albert_config.json"):
    """AlbertConfig from the dict of brightmart/albert_zh's `albert_config_*.json`."""
    ln_type = values.get("ln_type")
    if ln_type not in _BRIGHTMART_LN_TYPES:
        raise ValueError(f"{source}: ln_type={ln_type!r} is not supported "
                         "(supported: 'postln', 'preln')")
    config = _from_bert_names(values, source, _GOOGLE_ACTIVATIONS, "gelu", _BRIGHTMART_UNSUPPORTED)
    return config.replace(embedding_projection="word",
                          normalize_first=_BRIGHTMART_LN_TYPES[ln_type])
