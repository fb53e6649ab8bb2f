"""`AlbertBackbone`: embeddings, the shared encoder and the pooler."""

import contextlib

import keras
from keras import ops

from albert_tf.config import AlbertConfig
from albert_tf.layers.embedding import AlbertEmbedding
from albert_tf.layers.encoder import AlbertEncoder, LayerRecord
from albert_tf.layers.common import kernel_initializer
from albert_tf.sharing import sharing_plan

INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask")
# Added to attention scores at padded key positions (scores are float32).
_MASK_VALUE = -1e9


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertBackbone(keras.Model):
    """The ALBERT encoder (Lan et al. 2020) as a functional Keras model.

    Inputs, a dict of int32 tensors `(batch_size, seq_length)`:
        token_ids: word-piece ids; `[CLS]` first.
        segment_ids: 0 for the first segment (with `[CLS]` and its `[SEP]`),
            1 for the second, as in BERT's `token_type_ids`.
        padding_mask: 1 for real tokens, 0 for padding.

    Outputs, a dict:
        sequence_output: `(batch_size, seq_length, hidden_dim)`.
        pooled_output: `(batch_size, hidden_dim)`, `tanh(Dense(h_[CLS]))`.

    The attention and feed-forward modules are built once per stored module
    (see `albert_tf.sharing`) and called in a plain loop over the layers, so
    with `sharing="all"` one block serves all `num_layers` layers.

    Args:
        config: an `AlbertConfig`.
        dtype: a Keras dtype policy (or its name), e.g. "mixed_bfloat16".
        recompute: recompute the encoder's layers in the backward pass instead
            of keeping their activations (see `AlbertEncoder`).
        unroll: run the encoder's layers unrolled instead of in a loop (see
            `AlbertEncoder`; not with `recompute`). The same weights and
            numbers either way.

    Example:
    >>> config = AlbertConfig(vocabulary_size=11, num_layers=3, num_heads=2,
    ...                       hidden_dim=6, intermediate_dim=10, embedding_dim=4,
    ...                       max_sequence_length=9)
    >>> model = AlbertBackbone(config)
    >>> out = model({"token_ids": ops.ones((3, 7), "int32"),
    ...              "segment_ids": ops.zeros((3, 7), "int32"),
    ...              "padding_mask": ops.ones((3, 7), "int32")})
    >>> tuple(out["sequence_output"].shape), tuple(out["pooled_output"].shape)
    ((3, 7, 6), (3, 6))
    """

    def __init__(self, config, dtype=None, recompute=False, unroll=False, **kwargs):
        if not isinstance(config, AlbertConfig):
            raise TypeError(f"config must be an AlbertConfig, got {type(config).__name__}")
        # === Layers ===
        self.embeddings = AlbertEmbedding(
            vocabulary_size=config.vocabulary_size, embedding_dim=config.embedding_dim,
            hidden_dim=config.hidden_dim, max_sequence_length=config.max_sequence_length,
            num_segments=config.num_segments, dropout=config.dropout,
            layer_norm_epsilon=config.layer_norm_epsilon,
            initializer_range=config.initializer_range,
            embedding_projection=config.embedding_projection, dtype=dtype, name="embeddings")
        self.encoder = AlbertEncoder(config, sharing_plan(config), recompute=recompute,
                                     unroll=unroll, dtype=dtype, name="encoder")
        self.pooler = keras.layers.Dense(
            config.hidden_dim, activation="tanh",
            kernel_initializer=kernel_initializer(config.initializer_range),
            dtype=dtype, name="pooler")

        # === Functional graph ===
        token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        segment_ids = keras.Input(shape=(None,), dtype="int32", name="segment_ids")
        padding_mask = keras.Input(shape=(None,), dtype="int32", name="padding_mask")
        x = self.embeddings(token_ids, segment_ids)  # (batch, seq, H)
        x = self.encoder(x, _attention_bias(padding_mask))  # all layers, shared as the config says
        pooled = self.pooler(x[:, 0, :])  # (batch, H), from [CLS]
        super().__init__(
            inputs={"token_ids": token_ids, "segment_ids": segment_ids,
                    "padding_mask": padding_mask},
            outputs={"sequence_output": x, "pooled_output": pooled},
            **kwargs)
        if dtype is not None:
            # A functional model's constructor drops `dtype`; set it, so that
            # `get_config` saves it (as keras-hub's `Backbone` does).
            self.dtype_policy = keras.dtype_policies.get(dtype)

        # === Config ===
        self.config = config
        self.recompute = recompute
        self.unroll = unroll

    def call(self, inputs, training=None, mask=None):
        # A functional model maps a dict with extra keys onto its inputs by
        # position, silently wrong; task models pass richer dicts, so keep ours
        # (Keras itself names any missing key).
        if isinstance(inputs, dict):
            inputs = {k: v for k, v in inputs.items() if k in INPUT_NAMES}
        return super().call(inputs, training=training, mask=mask)

    def pooled_output(self, inputs, training=None):
        """`self(inputs)["pooled_output"]` alone, `(batch_size, hidden_dim)`,
        with the last layer computed at `[CLS]` only (`AlbertEncoder`'s
        `first_only`): the same numbers for less arithmetic, what the heads
        on the pooled output (classification, multiple choice) call. For
        albert-base at length 128, 7% of a forward pass's arithmetic less
        (`albert_tf.accounting` counts the full model; not when the encoder
        recomputes, see `AlbertEncoder.call`).

        inputs: a dict with the model's three inputs (other keys are ignored).
        """
        inputs = {k: ops.cast(inputs[k], "int32") for k in INPUT_NAMES}
        x = self.embeddings(inputs["token_ids"], inputs["segment_ids"], training=training)
        x = self.encoder(x, _attention_bias(inputs["padding_mask"]), training=training,
                         first_only=True)  # (batch, 1, H)
        return self.pooler(x[:, 0, :])

    def hidden_states(self, inputs):
        """Every layer's output, in inference mode: `[h_0, h_1, ..., h_L]`.

        `h_0` is the embedding output projected to `hidden_dim` (the first
        layer's input), `h_l` the output of layer `l` (its
        `num_inner_repetitions` blocks), `h_L` the `sequence_output`; each
        `(batch_size, seq_length, hidden_dim)`. What Hugging Face's
        `output_hidden_states` gives, and what `albert_tf.hidden_states`
        measures: a call under `recording()`.

        inputs: a dict with the model's three inputs.
        """
        inputs = {k: ops.convert_to_tensor(inputs[k], "int32") for k in INPUT_NAMES}
        with self.recording() as record:
            self(inputs, training=False)
        return record.hidden_states

    @contextlib.contextmanager
    def recording(self):
        """Calls inside keep every layer's hidden states and attention
        distributions in the yielded `LayerRecord` (of the last call), in
        training as in inference: what distillation's intermediate losses
        and `hidden_states` read. The layers run unrolled meanwhile (no
        encoder loop, no recomputation), so a recorded call takes more memory.
        """
        record = LayerRecord()
        self.encoder.recorder = record
        try:
            yield record
        finally:
            self.encoder.recorder = None

    @property
    def attention_blocks(self):
        return self.encoder.attention_blocks

    @property
    def ffn_blocks(self):
        return self.encoder.ffn_blocks

    @property
    def token_embedding(self):
        return self.embeddings.token_embedding

    def get_config(self):
        # Keras' base config (name, trainable, dtype policy); not the
        # functional graph, which the constructor rebuilds.
        config = super().get_config()
        config.update({"config": self.config.to_dict(), "recompute": self.recompute,
                       "unroll": self.unroll})
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if "dtype" in config:
            config["dtype"] = keras.dtype_policies.get(config["dtype"])
        return cls(AlbertConfig.from_dict(config.pop("config")), **config)


def _attention_bias(padding_mask):
    """`(batch, 1, 1, seq)` scores to add, broadcast over heads and query positions."""
    return (1.0 - ops.cast(padding_mask, "float32")[:, None, None, :]) * _MASK_VALUE
