"""The masked-language-model head that released ALBERT checkpoints contain."""

import keras
from keras import ops

from albert_tf.layers.common import activation_fn, kernel_initializer


class MaskedLMHead(keras.layers.Layer):
    """Dense H->E with activation, LayerNorm, then the tied decoder E->V.

    The decoder reuses the word-embedding matrix (V x E) transposed, plus an
    output bias of size V, as in Google's `get_masked_lm_output`.

    With `projection` (brightmart/albert_zh, `embedding_projection="word"`):
    Dense H->H with activation, LayerNorm over H, then back through the
    embedding projection's kernel transposed (H->E) before the tied decoder,
    as brightmart's `get_masked_lm_output` does.

    Args:
        token_embedding: the `keras.layers.Embedding` whose matrix is tied.
        projection: None, or the `keras.layers.Dense` (E -> H, no bias) of a
            `"word"` embedding projection, whose kernel is tied too.

    Call arguments:
        x: `(batch_size, num_positions, hidden_dim)`, the encoder output at
            the positions to predict.

    Returns:
        float32 logits `(batch_size, num_positions, vocabulary_size)`.
    """

    def __init__(self, token_embedding, hidden_dim, activation="gelu_approximate",
                 layer_norm_epsilon=1e-12, initializer_range=0.02, projection=None, **kwargs):
        super().__init__(**kwargs)
        self.token_embedding = token_embedding
        self.projection = projection
        # The width of the transform: E, or H when it goes back through `projection`.
        self.transform_dim = token_embedding.output_dim if projection is None else hidden_dim
        self.hidden_dim = hidden_dim
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            self.transform_dim, activation=activation_fn(activation),
            kernel_initializer=kernel_initializer(initializer_range),
            dtype=self.dtype_policy, name="dense")
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm")

    def build(self, x_shape):
        self.dense.build((None, None, self.hidden_dim))
        self.layer_norm.build((None, None, self.transform_dim))
        # Added to the float32 logits: kept float32 under mixed precision.
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.token_embedding.input_dim,), initializer="zeros",
            autocast=False)

    def call(self, x):
        h = self.layer_norm(self.dense(x))  # (batch, positions, E or H)
        if self.projection is not None:
            kernel = ops.cast(self.projection.kernel, h.dtype)  # (E, H)
            h = ops.matmul(h, ops.transpose(kernel))  # (batch, positions, E)
        table = ops.cast(self.token_embedding.embeddings, h.dtype)  # (V, E)
        logits = ops.matmul(h, ops.transpose(table))  # (batch, positions, V)
        return ops.cast(logits, "float32") + self.output_bias

    def compute_output_shape(self, x_shape):
        return tuple(x_shape[:-1]) + (self.token_embedding.input_dim,)
