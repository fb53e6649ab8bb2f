"""The factorized embedding of ALBERT (Lan et al. 2020, Section 3.1)."""

import keras
from keras import ops

from albert_tf.layers.common import kernel_initializer


class AlbertEmbedding(keras.layers.Layer):
    """Word, position and segment embeddings of size E, projected to H.

    The vocabulary is embedded in a small space (V x E) and projected to the
    hidden size (E x H), which is what cuts BERT's V x H embedding table.

    `embedding_projection` (see `AlbertConfig`): `"summed"` (Google):
    `Dense_H(LayerNorm(word + segment + position))`, all three of size E;
    `"word"` (brightmart/albert_zh's `embedding_lookup_factorized`):
    `LayerNorm(word @ P + segment + position)`, `P` (E x H) without bias and
    the segment and position embeddings of size H.

    Call arguments:
        token_ids: int tensor `(batch_size, seq_length)`.
        segment_ids: int tensor `(batch_size, seq_length)`.

    Returns:
        `(batch_size, seq_length, hidden_dim)`.

    Example:
    >>> layer = AlbertEmbedding(vocabulary_size=11, embedding_dim=4, hidden_dim=6,
    ...                         max_sequence_length=9, num_segments=2)
    >>> tuple(layer(ops.ones((3, 7), "int32"), ops.zeros((3, 7), "int32")).shape)
    (3, 7, 6)
    """

    def __init__(self, vocabulary_size, embedding_dim, hidden_dim, max_sequence_length,
                 num_segments, dropout=0.0, layer_norm_epsilon=1e-12,
                 initializer_range=0.02, embedding_projection="summed", **kwargs):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.embedding_dim = embedding_dim
        self.hidden_dim = hidden_dim
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.embedding_projection = embedding_projection
        if embedding_projection not in ("summed", "word"):
            raise ValueError(f"embedding_projection must be 'summed' or 'word', "
                             f"got {embedding_projection!r}")
        # The width of the segment and position embeddings and the LayerNorm.
        self.summed_dim = embedding_dim if embedding_projection == "summed" else hidden_dim

        init = kernel_initializer(initializer_range)
        self.token_embedding = keras.layers.Embedding(
            vocabulary_size, embedding_dim, embeddings_initializer=init,
            dtype=self.dtype_policy, name="token_embedding")
        self.segment_embedding = keras.layers.Embedding(
            num_segments, self.summed_dim, embeddings_initializer=init,
            dtype=self.dtype_policy, name="segment_embedding")
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm")
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy)
        self.projection = keras.layers.Dense(
            hidden_dim, use_bias=embedding_projection == "summed", kernel_initializer=init,
            dtype=self.dtype_policy, name="projection")

    def build(self, token_ids_shape=None, segment_ids_shape=None):
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(self.max_sequence_length, self.summed_dim),
            initializer=kernel_initializer(self.initializer_range))
        self.token_embedding.build(token_ids_shape)
        self.segment_embedding.build(token_ids_shape)
        self.layer_norm.build((None, None, self.summed_dim))
        self.projection.build((None, None, self.embedding_dim))

    def call(self, token_ids, segment_ids, training=None):
        seq_length = ops.shape(token_ids)[1]
        x = self.token_embedding(token_ids)  # (batch, seq, E)
        if self.embedding_projection == "word":
            x = self.projection(x)  # (batch, seq, H)
        x = x + self.segment_embedding(segment_ids)
        positions = ops.cast(self.position_embeddings[:seq_length], x.dtype)  # (seq, E or H)
        x = x + positions[None]
        x = self.layer_norm(x)
        x = self.dropout_layer(x, training=training)
        if self.embedding_projection == "word":
            return x
        return self.projection(x)  # (batch, seq, H)

    def compute_output_shape(self, token_ids_shape, segment_ids_shape=None):
        return tuple(token_ids_shape) + (self.hidden_dim,)

    def get_config(self):
        config = super().get_config()
        config.update({
            "vocabulary_size": self.vocabulary_size,
            "embedding_dim": self.embedding_dim,
            "hidden_dim": self.hidden_dim,
            "max_sequence_length": self.max_sequence_length,
            "num_segments": self.num_segments,
            "dropout": self.dropout,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "initializer_range": self.initializer_range,
            "embedding_projection": self.embedding_projection,
        })
        return config
