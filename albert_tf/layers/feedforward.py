"""The feed-forward sub-layer of a post-LayerNorm transformer block."""

import keras

from albert_tf.layers.init import activation_fn, kernel_initializer


class FeedForwardBlock(keras.layers.Layer):
    """`LayerNorm(x + Dropout(Dense_H(act(Dense_I(x)))))`.

    Google's names: `ffn_1/intermediate/dense`, `ffn_1/intermediate/output/dense`
    and `LayerNorm_1`.

    Call arguments:
        x: `(batch_size, seq_length, hidden_dim)`.

    Returns:
        `(batch_size, seq_length, hidden_dim)`.
    """

    def __init__(self, hidden_dim, intermediate_dim, activation="gelu_approximate",
                 dropout=0.0, layer_norm_epsilon=1e-12, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.activation = activation
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

        init = kernel_initializer(initializer_range)
        self.intermediate = keras.layers.Dense(
            intermediate_dim, activation=activation_fn(activation), kernel_initializer=init,
            dtype=self.dtype_policy, name="intermediate")
        self.output_dense = keras.layers.Dense(
            hidden_dim, kernel_initializer=init, dtype=self.dtype_policy, name="output")
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm")
        self.output_dropout = keras.layers.Dropout(dropout, dtype=self.dtype_policy)

    def build(self, x_shape):
        self.intermediate.build((None, None, self.hidden_dim))
        self.output_dense.build((None, None, self.intermediate_dim))
        self.layer_norm.build((None, None, self.hidden_dim))

    def call(self, x, training=None):
        h = self.intermediate(x)  # (batch, seq, intermediate)
        out = self.output_dropout(self.output_dense(h), training=training)
        return self.layer_norm(x + out)

    def compute_output_shape(self, x_shape):
        return x_shape

    def get_config(self):
        config = super().get_config()
        config.update({
            "hidden_dim": self.hidden_dim,
            "intermediate_dim": self.intermediate_dim,
            "activation": self.activation,
            "dropout": self.dropout,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "initializer_range": self.initializer_range,
        })
        return config
