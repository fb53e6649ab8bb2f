"""Which weights each transformer block call uses, for every sharing mode.

The encoder makes `num_layers * num_inner_repetitions` block calls. Each call
is an attention sub-layer followed by a feed-forward sub-layer; this module
says which stored attention module and which stored feed-forward module each
call uses. The model, the checkpoint converters and the resource accounting
all read the same plan, so that they cannot disagree.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class SharingPlan:
    """`attention[c]` / `ffn[c]`: module index used by block call `c`."""

    attention: tuple
    ffn: tuple
    num_attention_modules: int
    num_ffn_modules: int

    @property
    def num_calls(self):
        return len(self.attention)


def group_of_layer(layer, num_layers, num_groups):
    """Google's rule: layer `l` of `L` uses group `floor(l * G / L)`."""
    return layer * num_groups // num_layers


def sharing_plan(config):
    """The `SharingPlan` of an `AlbertConfig`.

    Shared modules are numbered `group * K + inner`, unshared ones
    `layer * K + inner` (K = `num_inner_repetitions`), so that with
    `sharing="all"` module `g * K + k` is Google's `group_g/inner_group_k`.
    """
    num_layers, num_groups = config.num_layers, config.num_groups
    inner = config.num_inner_repetitions
    shared, unshared = [], []
    for layer in range(num_layers):
        group = group_of_layer(layer, num_layers, num_groups)
        for k in range(inner):
            shared.append(group * inner + k)
            unshared.append(layer * inner + k)
    attention_shared = config.sharing in ("all", "attention")
    ffn_shared = config.sharing in ("all", "ffn")
    return SharingPlan(
        attention=tuple(shared if attention_shared else unshared),
        ffn=tuple(shared if ffn_shared else unshared),
        num_attention_modules=(num_groups if attention_shared else num_layers) * inner,
        num_ffn_modules=(num_groups if ffn_shared else num_layers) * inner,
    )
