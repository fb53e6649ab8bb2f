"""`AlbertEncoder`: the stored transformer blocks, called layer after layer."""

import itertools

import keras
import tensorflow as tf

from albert_tf.layers.attention import SelfAttentionBlock
from albert_tf.layers.feedforward import FeedForwardBlock


class AlbertEncoder(keras.layers.Layer):
    """The transformer layers of ALBERT, with weight sharing per `config.sharing`.

    The attention and feed-forward modules of `albert_tf.sharing` are built
    once, and a loop applies them layer after layer: each run of consecutive
    layers made of the same modules (the whole stack with `sharing="all"`
    and one group; each group's layers with grouped sharing) is one
    `tf.while_loop`, whose backward pass sums the shared
    weights' gradients as it goes (see `repeat`). Each module's weights are
    cast to the compute dtype once per call of the encoder, not once per
    layer, and their gradients are summed in the compute dtype before one
    cast back.

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
            raise ValueError("recomputation (remat=True, --recompute) needs dropout=0 and "
                             "attention_dropout=0 (a recomputed layer would draw new masks), got "
                             f"{config.dropout} and {config.attention_dropout}")
        self.plan = plan
        self.remat = remat
        self.num_inner_repetitions = config.num_inner_repetitions
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
        calls = list(zip(self.plan.attention, self.plan.ffn))  # (attention, ffn) per call
        inner = self.num_inner_repetitions
        layers = [tuple(calls[i:i + inner]) for i in range(0, len(calls), inner)]
        for modules, run in itertools.groupby(layers):
            structure = [(attention[a], ffn[f]) for a, f in modules]  # weights per call

            def layer(x, attention_bias, *weights, modules=modules, structure=structure):
                per_call = tf.nest.pack_sequence_as(structure, weights)
                for (a, f), (attention_weights, ffn_weights) in zip(modules, per_call):
                    x = self.attention_blocks[a].call_with(
                        attention_weights, x, attention_bias, training)
                    x = self.ffn_blocks[f].call_with(ffn_weights, x, training)
                return x

            x = repeat(layer, len(list(run)), x, (attention_bias,), tf.nest.flatten(structure),
                       self.remat)
        return x

    def compute_output_shape(self, x_shape, attention_bias_shape=None):
        return x_shape


def repeat(layer, times, x, constants, weights, recompute=False):
    """`x = layer(x, *constants, *weights)`, `times` times, in one `tf.while_loop`.

    Unrolled, the backward pass of `times` calls would make `times` gradients
    for the shared weights and sum them with one `AddN` at the end (graph
    optimisation folds any chain of adds into it), so all of them would be
    alive at once: for xxlarge's 0.8 GB block and twelve layers, 9.6 GB, more
    than the activations. The gradient of a loop adds each call's
    contribution to a running sum instead.

    constants: tensors `layer` needs and that get no gradient.
    recompute: keep only each call's input `x` and compute the call again in
        the backward pass (`layer` must then be deterministic and read no
        variables: everything it needs comes in as an argument).
    """
    if recompute:
        return _recomputed_repeat(layer, times, x, constants, weights)
    if times == 1:
        return layer(x, *constants, *weights)
    _, x = _loop(lambda i, x: (i + 1, layer(x, *constants, *weights)), (0, x), times)
    return x


def _loop(body, loop_vars, times):
    """`loop_vars = body(*loop_vars)`, `times` times.

    One iteration at a time: by default TensorFlow may start ten iterations
    at once, and a recomputing backward pass would then recompute (and hold)
    the activations of ten layers before it needs them.
    """
    return tf.while_loop(lambda *_: True, body, loop_vars, maximum_iterations=times,
                         parallel_iterations=1)


def _recomputed_repeat(layer, times, x, constants, weights):
    """`repeat` with recomputation, its backward pass written out.

    The forward loop keeps only the layers' inputs, stacked into one
    `(times, batch_size, seq_length, hidden_dim)` tensor; the backward loop
    recomputes one layer at a time, takes its gradients and adds the
    weights' ones to running sums.
    """
    num_constants = len(constants)

    @tf.custom_gradient
    def run(x, *args):
        constants, weights = args[:num_constants], args[num_constants:]

        def forward(i, x, inputs):
            return i + 1, layer(x, *constants, *weights), inputs.write(i, x)

        inputs = tf.TensorArray(x.dtype, size=times, element_shape=x.shape)
        _, y, inputs = _loop(forward, (0, x, inputs), times)
        inputs = inputs.stack()  # (times, batch_size, seq_length, hidden_dim)

        def backward(i, dy, *sums):
            x_i = inputs[i]
            with tf.GradientTape() as tape:
                tape.watch([x_i, *weights])
                y_i = layer(x_i, *constants, *weights)
            dx, *dw = tape.gradient(y_i, [x_i, *weights], output_gradients=dy,
                                    unconnected_gradients=tf.UnconnectedGradients.ZERO)
            return (i - 1, dx, *(s + d for s, d in zip(sums, dw)))

        def gradient(dy):
            zeros = tuple(tf.zeros_like(w) for w in weights)
            _, dx, *dw = _loop(backward, (times - 1, dy, *zeros), times)
            return (dx, *[None] * num_constants, *dw)

        return y, gradient

    return run(x, *constants, *weights)
