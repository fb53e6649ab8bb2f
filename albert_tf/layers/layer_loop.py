"""`repeat`: one layer applied many times with the same weights, in one loop.

What makes a shared ALBERT block affordable in memory: the gradients of its
weights are summed layer by layer as the backward pass goes, and, with
recomputation, only each layer's input is kept for the backward pass.
"""

import tensorflow as tf


def repeat(layer, times, x, constants, weights, recompute=False, unroll=False):
    """`x = layer(x, *constants, weights)`, `times` times, in one `tf.while_loop`
    (or, with `unroll`, in a Python loop: `times` copies of the layer in the graph).

    Unrolled, the backward pass of `times` calls would make `times` gradients
    for the shared weights and sum them with one `AddN` at the end (graph
    optimisation folds any chain of adds into it), so all of them would be
    alive at once: for xxlarge's 0.8 GB block and twelve layers, 9.6 GB, more
    than the activations. The gradient of a loop adds each call's
    contribution to a running sum instead.

    Args:
        layer: `layer(x, *constants, weights) -> x`, same shape and dtype.
        times: how many times to apply it (a Python int; 0 returns `x`).
        x: the first input, e.g. `(batch_size, seq_length, hidden_dim)`.
        constants: tensors `layer` needs and that get no gradient.
        weights: a nest of tensors (NamedTuples, lists, ...) that `layer` is
            given as is and that get gradients; each tensor at most once
            (with recomputation, one given twice would get its gradient twice).
        recompute: keep only each call's input `x` and compute the call again
            in the backward pass (`layer` must then be deterministic and read
            no variables: everything it needs comes in as an argument).
        unroll: call `layer` `times` times in a Python loop. XLA then
            compiles (and fuses across) every layer, and `layer` may keep
            Python side effects per call (recording each layer's output),
            at the cost of the unrolled backward pass's memory (above).
            Not with `recompute`, whose saving needs the loop.
    """
    if recompute and unroll:
        raise ValueError("repeat: recompute needs the loop (unroll=False)")
    if times == 0:
        return x
    if recompute:
        return _recomputed_repeat(layer, times, x, constants, weights)
    if unroll or times == 1:
        for _ in range(times):
            x = layer(x, *constants, weights)
        return x
    _, x = _loop(lambda i, x: (i + 1, layer(x, *constants, weights)), (0, x), times)
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

    # `tf.custom_gradient` takes flat tensor arguments: the weights travel
    # flattened and are packed back into their structure for `layer`.
    @tf.custom_gradient
    def run(x, *args):
        constants, flat_weights = args[:num_constants], list(args[num_constants:])
        structured = tf.nest.pack_sequence_as(weights, flat_weights)

        def forward(i, x, inputs):
            return i + 1, layer(x, *constants, structured), inputs.write(i, x)

        inputs = tf.TensorArray(x.dtype, size=times, element_shape=x.shape)
        _, y, inputs = _loop(forward, (0, x, inputs), times)
        inputs = inputs.stack()  # (times, batch_size, seq_length, hidden_dim)

        def backward(i, dy, *sums):
            x_i = inputs[i]
            with tf.GradientTape() as tape:
                tape.watch([x_i, *flat_weights])
                y_i = layer(x_i, *constants, structured)
            dx, *dw = tape.gradient(y_i, [x_i, *flat_weights], output_gradients=dy,
                                    unconnected_gradients=tf.UnconnectedGradients.ZERO)
            return (i - 1, dx, *(s + d for s, d in zip(sums, dw)))

        def gradient(dy):
            zeros = tuple(tf.zeros_like(w) for w in flat_weights)
            _, dx, *dw = _loop(backward, (times - 1, dy, *zeros), times)
            return (dx, *[None] * num_constants, *dw)

        return y, gradient

    return run(x, *constants, *tf.nest.flatten(weights))
