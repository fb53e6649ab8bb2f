"""`AlbertEncoder`: the stored transformer blocks, called layer after layer."""

import keras

from albert_tf.layers.attention import SelfAttentionBlock
from albert_tf.layers.feedforward import FeedForwardBlock


class AlbertEncoder(keras.layers.Layer):
    """The transformer layers of ALBERT, with weight sharing per `config.sharing`.

    The attention and feed-forward modules of `albert_tf.sharing` are built
    once, and a plain loop applies them layer after layer. Each module's
    weights are cast to the compute dtype once per call of the encoder, not
    once per layer: with every layer shared, that is one cast instead of
    twelve, and the layers' twelve gradient contributions are summed in the
    compute dtype before one cast back.

    config: an `AlbertConfig`; plan: its `albert_tf.sharing.SharingPlan`.
    remat: recompute each block in the backward pass instead of keeping its
        activations (needs dropout 0: a recomputed block would draw new masks).

    Call arguments:
        x: `(batch_size, seq_length, hidden_dim)`.
        attention_bias: float `(batch_size, 1, 1, seq_length)`, see `SelfAttentionBlock`.
    """

    def __init__(self, config, plan, remat=False, **kwargs):
        super().__init__(**kwargs)
        if remat and (config.dropout or config.attention_dropout):
            raise ValueError("remat=True needs dropout=0 and attention_dropout=0, got "
                             f"{config.dropout} and {config.attention_dropout}")
        self.plan = plan
        self.remat = remat
        self.hidden_dim = config.hidden_dim
        common = dict(hidden_dim=config.hidden_dim, dropout=config.dropout,
                      layer_norm_epsilon=config.layer_norm_epsilon,
                      initializer_range=config.initializer_range, dtype=self.dtype_policy)
        self.attention_blocks = [
            SelfAttentionBlock(num_heads=config.num_heads,
                               attention_dropout=config.attention_dropout,
                               name=f"attention_{j}", **common)
            for j in range(self.plan.num_attention_modules)]
        self.ffn_blocks = [
            FeedForwardBlock(intermediate_dim=config.intermediate_dim,
                             activation=config.activation, name=f"ffn_{j}", **common)
            for j in range(self.plan.num_ffn_modules)]
        # Built here, outside this layer's name scope, so that the weights keep
        # their stable names (`attention_0/query/kernel`): checkpoints use them.
        for block in self.attention_blocks + self.ffn_blocks:
            block.build((None, None, config.hidden_dim))

    def build(self, x_shape=None, attention_bias_shape=None):
        self.built = True

    def call(self, x, attention_bias, training=None):
        attention = [b.compute_weights() for b in self.attention_blocks]
        ffn = [b.compute_weights() for b in self.ffn_blocks]
        for a, f in zip(self.plan.attention, self.plan.ffn):
            def layer(x, *weights, a=a, f=f):
                x = self.attention_blocks[a].call_with(weights[:4], x, attention_bias, training)
                return self.ffn_blocks[f].call_with(weights[4:], x, training)

            # The weights are arguments, not closure captures: recomputation
            # passes gradients only to a function's inputs (and variables).
            x = (keras.remat(layer) if self.remat else layer)(x, *attention[a], *ffn[f])
        return x

    def compute_output_shape(self, x_shape, attention_bias_shape=None):
        return x_shape
