"""Parameters, FLOPs and activation memory of an ALBERT configuration.

Counted analytically from the config (no model is built), per component, so
that the effect of weight sharing is plain: sharing divides the parameters
that are stored, but every layer still runs, so FLOPs and the activations
kept for the backward pass do not change.

Conventions:
- A multiply-add is 2 FLOPs. Matrix products are counted exactly; element-
  wise work is estimated (LayerNorm 8, GELU 10, softmax 5 FLOPs per element).
- A training step costs 3x the forward FLOPs (the backward pass computes
  gradients for both inputs and weights, 2x the forward matmuls).
- Activation memory counts the tensors that backpropagation keeps, per
  example: for each block call its input, Q, K, V, the attention
  probabilities (heads x S x S), the attention context, both LayerNorm
  inputs, and the feed-forward pre- and post-activation (2 x S x I);
  dropout masks are left out (ALBERT v2 uses no dropout).
- Pretraining heads predict at `mlm_fraction` of the positions (15%).
- Pre-LayerNorm blocks (`normalize_first`) cost what post-LayerNorm ones do:
  the same LayerNorms, applied to the block inputs instead of the sums.
"""

import dataclasses

from albert_tf.sharing import sharing_plan

COMPONENTS = ("embeddings", "projection", "attention", "ffn", "layer_norms", "pooler", "heads")
_LN_FLOPS, _GELU_FLOPS, _SOFTMAX_FLOPS = 8, 10, 5


@dataclasses.dataclass(frozen=True)
class Cost:
    params: int = 0
    flops_per_token: float = 0.0  # forward pass
    activation_elements: float = 0.0  # per example

    def __add__(self, other):
        return Cost(self.params + other.params, self.flops_per_token + other.flops_per_token,
                    self.activation_elements + other.activation_elements)


def component_costs(config, seq_length, heads=False, mlm_fraction=0.15):
    """{component: Cost} for `config` at `seq_length` tokens per example."""
    s, h, e, v = seq_length, config.hidden_dim, config.embedding_dim, config.vocabulary_size
    i, a = config.intermediate_dim, config.num_heads
    plan = sharing_plan(config)
    calls = plan.num_calls
    ln_params = 2 * h
    attention_params = 4 * (h * h + h)
    ffn_params = h * i + i + i * h + h
    # `embedding_projection="word"` (brightmart): only the word table is E-wide,
    # the projection (no bias) comes before the sum, and positions, segments
    # and the embedding LayerNorm are H-wide.
    word = config.embedding_projection == "word"
    d = h if word else e  # the width of the summed embeddings and their LayerNorm
    costs = {
        "embeddings": Cost(
            params=v * e + (config.max_sequence_length + config.num_segments) * d,
            activation_elements=s * d),  # the LayerNorm input
        "projection": Cost(params=e * h + (0 if word else h), flops_per_token=2 * e * h,
                           activation_elements=s * e),  # its input
        "attention": Cost(
            params=plan.num_attention_modules * attention_params,
            # Q, K, V and output projections; scores and context over s keys.
            flops_per_token=calls * (8 * h * h + 4 * s * h + _SOFTMAX_FLOPS * a * s),
            # input, Q, K, V, probabilities, context
            activation_elements=calls * (5 * s * h + a * s * s)),
        "ffn": Cost(
            params=plan.num_ffn_modules * ffn_params,
            flops_per_token=calls * (4 * h * i + _GELU_FLOPS * i),
            activation_elements=calls * (s * h + 2 * s * i)),
        "layer_norms": Cost(
            params=2 * d + ln_params * (plan.num_attention_modules + plan.num_ffn_modules),
            flops_per_token=_LN_FLOPS * (d + 2 * calls * h),
            activation_elements=calls * 2 * s * h),
        "pooler": Cost(params=h * h + h, flops_per_token=2 * h * h / s, activation_elements=h),
        "heads": Cost(),
    }
    if heads:
        p = mlm_fraction
        # MLM: dense H->t (t = E, or H going back through the projection with
        # "word"), LayerNorm, [H->E through the projection,] output bias
        # (decoder tied); SOP: H->2.
        t = h if word else e
        back = 2 * h * e if word else 0
        costs["heads"] = Cost(
            params=h * t + t + 2 * t + v + 2 * h + 2,
            flops_per_token=p * (2 * h * t + (_GELU_FLOPS + _LN_FLOPS) * t + back + 2 * e * v)
            + 4 * h / s,
            activation_elements=p * s * (h + 2 * t + (e if word else 0) + v) + h)
    return costs


def total(costs, components=COMPONENTS):
    out = Cost()
    for name in components:
        out = out + costs[name]
    return out


def first_only_saving(config, seq_length):
    """Forward FLOPs per token that `AlbertBackbone.pooled_output` does not
    do: its last block call computes the `[CLS]` position alone, so the other
    `seq_length - 1` positions' query, scores, context, output projection,
    LayerNorms and feed-forward pass of that call are skipped (their keys
    and values are computed). Per token of the whole sequence, like
    `component_costs`."""
    s, h = seq_length, config.hidden_dim
    costs, calls = component_costs(config, s), sharing_plan(config).num_calls
    attention = costs["attention"].flops_per_token / calls - 4 * h * h  # but K and V
    per_position = attention + costs["ffn"].flops_per_token / calls + 2 * _LN_FLOPS * h
    return per_position * (s - 1) / s


def backbone_params(config):
    """Unique backbone parameters (with pooler, without heads)."""
    return total(component_costs(config, seq_length=1), COMPONENTS[:-1]).params
