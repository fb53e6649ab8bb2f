"""`AlbertEncoder`: the stored transformer blocks, called layer after layer."""

import contextlib
import dataclasses
import functools
import itertools
from typing import NamedTuple

import keras

from albert_tf.layers import fused
from albert_tf.layers.attention import AttentionWeights, SelfAttentionBlock
from albert_tf.layers.feedforward import FeedForwardBlock, FeedForwardWeights
from albert_tf.layers.layer_loop import repeat


class BlockCall(NamedTuple):
    """The stored modules that one transformer block call uses (indices)."""

    attention: int
    ffn: int


class BlockWeights(NamedTuple):
    """The weights of one block call, in the compute dtype."""

    attention: AttentionWeights
    ffn: FeedForwardWeights


class LayerRun(NamedTuple):
    """`times` consecutive layers that are the same block `calls` (one layer's
    `num_inner_repetitions` of them): one loop of `repeat`."""

    calls: tuple
    times: int


def layer_runs(plan, num_inner_repetitions):
    """The layers of a `SharingPlan` grouped into runs of identical layers.

    `sharing="all"` with one group is one run of `num_layers` layers; grouped
    sharing, a run per group; no sharing, a run per layer.
    """
    calls = [BlockCall(a, f) for a, f in zip(plan.attention, plan.ffn)]
    k = num_inner_repetitions
    layers = [tuple(calls[i:i + k]) for i in range(0, len(calls), k)]
    return tuple(LayerRun(calls, len(list(run))) for calls, run in itertools.groupby(layers))


@dataclasses.dataclass
class LayerRecord:
    """What a recording encoder call keeps (`AlbertBackbone.recording`).

    hidden_states: `[h_0, ..., h_L]`, the first layer's input and every
        layer's output, each `(batch_size, seq_length, hidden_dim)`.
    attention_probs: `[a_1, ..., a_L]`, each layer's attention distributions
        (of its last block call), float32 `(batch_size, num_heads, seq, seq)`.
    Layer `l` is the `l`-th application of a block, whether its weights are
    shared or not: a model whose 12 layers share one block records 12.
    (A dataclass, not a tuple: Keras would copy a tuple set on a layer.)
    """

    hidden_states: list = dataclasses.field(default_factory=list)
    attention_probs: list = dataclasses.field(default_factory=list)


class AlbertEncoder(keras.layers.Layer):
    """The transformer layers of ALBERT, with weight sharing per `config.sharing`.

    The attention and feed-forward modules of `albert_tf.sharing` are built
    once, and `albert_tf.layers.layer_loop` applies them layer after layer: each
    run of consecutive layers made of the same modules (the whole stack with
    `sharing="all"` and one group; each group's layers with grouped sharing)
    is one `repeat`, by default a `tf.while_loop`, whose backward pass sums
    the shared weights' gradients as it goes (see `albert_tf.layers.layer_loop`);
    with `unroll`, a Python loop. Each module's weights are
    cast to the compute dtype once per call of the encoder, not once per
    layer, and their gradients are summed in the compute dtype before one
    cast back.

    config: an `AlbertConfig`; plan: its `albert_tf.sharing.SharingPlan`.
    recompute: recompute each block in the backward pass instead of keeping
        its activations (needs dropout 0: a recomputed block would draw new
        masks).
    unroll: call the layers in a Python loop instead of a `tf.while_loop`
        (`repeat`'s `unroll`): with XLA, faster on some CPUs, and the
        gradients of shared weights are summed at the end (more memory).
        Not with `recompute`.

    Inference (`training` false) runs unrolled whatever `unroll` says. While
    `recorder` holds a `LayerRecord` (`AlbertBackbone.recording`), a call
    runs unrolled, without recomputation, and keeps every layer's
    hidden states and attention distributions in it.

    Call arguments:
        x: `(batch_size, seq_length, hidden_dim)`.
        attention_bias: float `(batch_size, 1, 1, seq_length)`, see `SelfAttentionBlock`.
    """

    def __init__(self, config, plan, recompute=False, unroll=False, **kwargs):
        super().__init__(**kwargs)
        if recompute and unroll:
            raise ValueError("recomputation (recompute=True, --recompute) runs the layers in a "
                             "loop: it cannot be unrolled (unroll=True, --layer_execution="
                             "unrolled)")
        if recompute and (config.dropout or config.attention_dropout):
            raise ValueError("recomputation (recompute=True, --recompute) needs dropout=0 and "
                             "attention_dropout=0 (a recomputed layer would draw new masks), got "
                             f"{config.dropout} and {config.attention_dropout}")
        self.plan = plan
        self.recompute = recompute
        self.unroll = unroll
        self.num_inner_repetitions = config.num_inner_repetitions
        self.hidden_dim = config.hidden_dim
        self.runs = layer_runs(plan, config.num_inner_repetitions)
        # A `LayerRecord` while `AlbertBackbone.recording()` is on, else None.
        self.recorder = None
        common = dict(hidden_dim=config.hidden_dim, dropout=config.dropout,
                      layer_norm_epsilon=config.layer_norm_epsilon,
                      initializer_range=config.initializer_range,
                      normalize_first=config.normalize_first, dtype=self.dtype_policy)
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

    def _run_weights(self):
        """Each run's `BlockWeights`, cast once and used by every layer of every run."""
        attention = [block.compute_weights() for block in self.attention_blocks]
        ffn = [block.compute_weights() for block in self.ffn_blocks]
        return [[BlockWeights(attention[c.attention], ffn[c.ffn]) for c in run.calls]
                for run in self.runs]

    def call(self, x, attention_bias, training=None, first_only=False):
        """first_only: the last block call computes the first position
        (`[CLS]`) only (`SelfAttentionBlock.call_with`): the output is
        `(batch_size, 1, hidden_dim)`, what a head on `[CLS]` alone reads, for
        about one layer's arithmetic less. Ignored while recording (every
        layer's states are kept whole) and when recomputing: a last call
        outside the recomputed loop would hold one more copy of the shared
        block's gradients (xxlarge, length 512, batch 2, bf16: peak 6.18 GiB
        instead of 5.70)."""
        record = self.recorder
        if record is not None:
            record.hidden_states.append(x)
        recompute = self.recompute and record is None and bool(training)
        first_only = first_only and record is None and not recompute
        for i, (run, weights) in enumerate(zip(self.runs, self._run_weights())):
            layer = functools.partial(self._layer, run.calls, training=training, record=record)
            last = first_only and i == len(self.runs) - 1
            # A recording call runs unrolled: each layer's outputs are kept. So
            # does inference, where the loop saves nothing (no backward pass)
            # and costs time (albert-base bf16 forward: 0.8x unrolled's speed).
            x = repeat(layer, run.times - last, x, (attention_bias,), weights,
                       recompute=recompute,
                       unroll=self.unroll or record is not None or not training)
            if last:
                x = layer(x, attention_bias, weights, first_only=True)
        return x  # (batch_size, seq_length or 1, hidden_dim)

    def _layer(self, calls, x, attention_bias, weights, training=None, record=None,
               first_only=False):
        """One layer: its block `calls` in turn, with their `BlockWeights`;
        its output and last attention distributions added to `record` if given.
        first_only: the last call computes the first position only."""
        for i, (call, w) in enumerate(zip(calls, weights)):
            first = first_only and i == len(calls) - 1
            # The [CLS] row alone is too small for the fused kernels to repay
            # compiling them for its shapes: standard ops.
            with fused.plain_ops() if first else contextlib.nullcontext():
                x, probs = self.attention_blocks[call.attention].call_with(
                    w.attention, x, attention_bias, training, return_probs=True,
                    first_only=first)
                x = self.ffn_blocks[call.ffn].call_with(w.ffn, x, training)
        if record is not None:
            record.hidden_states.append(x)
            record.attention_probs.append(probs)
        return x

    def compute_output_shape(self, x_shape, attention_bias_shape=None):
        return x_shape
