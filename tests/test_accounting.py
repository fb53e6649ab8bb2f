import subprocess
import sys

import pytest

from albert_tf import accounting
from albert_tf.config import AlbertConfig


@pytest.mark.parametrize("preset,expected", [
    ("albert_base", 11_683_584), ("albert_large", 17_683_968),
    ("albert_xlarge", 58_724_864), ("albert_xxlarge", 222_595_584),
])
def test_published_parameter_counts(preset, expected):
    assert accounting.backbone_params(AlbertConfig.preset(preset)) == expected


@pytest.mark.parametrize("sharing,expected", [
    ("all", 11_683_584), ("ffn", 37_686_528), ("attention", 63_647_232),
    ("none", 89_650_176),
])
def test_base_sharing_modes_match_paper_table4(sharing, expected):
    # Lan et al. (2020), Table 4: 12M / 38M / 64M / 89M.
    assert accounting.backbone_params(AlbertConfig.preset("albert_base", sharing=sharing)) \
        == expected


def test_sharing_changes_parameters_not_computation():
    costs = {m: accounting.total(accounting.component_costs(
        AlbertConfig.preset("albert_base", sharing=m), 128, heads=True))
        for m in ("all", "attention", "ffn", "none")}
    assert len({c.params for c in costs.values()}) == 4
    assert len({c.flops_per_token for c in costs.values()}) == 1
    assert len({c.activation_elements for c in costs.values()}) == 1


def test_flops_dominated_by_matmuls():
    # Forward matmul FLOPs per token of one base layer at seq 128:
    # 8H^2 (Q, K, V, out) + 4SH (scores, context) + 4HI (feed-forward).
    config = AlbertConfig.preset("albert_base")
    h, i, s = 768, 3072, 128
    per_layer = 8 * h * h + 4 * s * h + 4 * h * i
    flops = accounting.total(accounting.component_costs(config, s)).flops_per_token
    assert 12 * per_layer < flops < 12 * per_layer * 1.01


def test_inner_repetitions_multiply_computation():
    one = accounting.component_costs(AlbertConfig.preset("albert_base"), 128)
    two = accounting.component_costs(
        AlbertConfig.preset("albert_base", num_inner_repetitions=2), 128)
    assert two["ffn"].flops_per_token == 2 * one["ffn"].flops_per_token
    assert two["ffn"].params == 2 * one["ffn"].params


def _inspect(*args):
    return subprocess.run([sys.executable, "-m", "albert_tf.inspect", *args],
                          capture_output=True, text=True, timeout=60)


def test_inspect_cli_side_by_side():
    result = _inspect("--model=albert_base", "--seq_length=128")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "11,683,584" in out and "37,686,528" in out and "63,647,232" in out
    assert "89,650,176" in out
    assert "identical FLOPs and activation memory" in out


def test_inspect_cli_bad_model_is_one_line():
    result = _inspect("--model=albert_hueg")
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        "error: --model='albert_hueg' is neither a config file nor a preset "
        "(albert_base, albert_large, albert_tiny, albert_xlarge, albert_xxlarge)"]


def _traced_matmul_flops(fn, seq_length):
    """2 x m x n x k over the MatMul and BatchMatMul ops `fn` traces, in standard ops."""
    import numpy as np
    import tensorflow as tf

    from albert_tf.layers import fused

    spec = {k: tf.TensorSpec((2, seq_length), tf.int32)
            for k in ("token_ids", "segment_ids", "padding_mask")}
    with fused.plain_ops():
        graph = tf.function(fn).get_concrete_function(spec).graph
    total = 0
    for op in graph.get_operations():
        if op.type in ("MatMul", "BatchMatMulV2"):
            a = op.inputs[0].shape
            transposed = op.get_attr("transpose_a" if op.type == "MatMul" else "adj_x")
            total += 2 * int(np.prod(op.outputs[0].shape)) * (a[-2] if transposed else a[-1])
    return total


def test_first_only_saving_is_what_pooled_output_skips():
    # The products that `pooled_output` leaves out, counted in its traced graph
    # against the full model's; the saving adds only the elementwise estimates.
    from albert_tf.backbone import AlbertBackbone

    config = AlbertConfig(vocabulary_size=50, num_layers=3, num_heads=2, hidden_dim=64,
                          intermediate_dim=256, embedding_dim=16, max_sequence_length=16)
    model, s = AlbertBackbone(config), 8
    skipped = (_traced_matmul_flops(lambda x: model(x)["pooled_output"], s)
               - _traced_matmul_flops(model.pooled_output, s)) / (2 * s)  # per token
    assert skipped > 0
    saving = accounting.first_only_saving(config, s)
    assert skipped <= saving <= 1.05 * skipped
