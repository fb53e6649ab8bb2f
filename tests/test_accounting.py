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
