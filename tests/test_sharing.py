import pytest

from albert_tf.sharing import group_of_layer, sharing_plan
from helpers import tiny_config


def test_google_group_rule():
    # 12 layers, 3 groups: layers 0-3 -> 0, 4-7 -> 1, 8-11 -> 2.
    assert [group_of_layer(l, 12, 3) for l in range(12)] == [0] * 4 + [1] * 4 + [2] * 4


@pytest.mark.parametrize("sharing,attention,ffn", [
    ("all", (0, 0, 0), (0, 0, 0)),
    ("attention", (0, 0, 0), (0, 1, 2)),
    ("ffn", (0, 1, 2), (0, 0, 0)),
    ("none", (0, 1, 2), (0, 1, 2)),
])
def test_modes(sharing, attention, ffn):
    plan = sharing_plan(tiny_config(sharing=sharing))
    assert (plan.attention, plan.ffn) == (attention, ffn)
    assert (plan.num_attention_modules, plan.num_ffn_modules) == (max(attention) + 1,
                                                                  max(ffn) + 1)


def test_groups_with_inner_blocks():
    plan = sharing_plan(tiny_config(num_layers=4, num_groups=2, num_inner_repetitions=2))
    # Each layer applies both inner blocks of its group, in order.
    assert plan.attention == (0, 1, 0, 1, 2, 3, 2, 3)
    assert plan.num_attention_modules == 4 and plan.num_calls == 8
