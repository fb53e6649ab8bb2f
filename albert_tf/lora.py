"""LoRA: low-rank adapters on the attention of a frozen backbone (Hu et al., 2021).

The semantics of keras-hub's `Backbone.enable_lora(rank)`, through Keras'
own `Dense.enable_lora`: every backbone weight is frozen; each adapted
projection gains `A` `(in_dim, rank)` (He-uniform) and `B` `(rank, out_dim)`
(zeros, so training starts from the pretrained model), and computes with
`kernel + (alpha / rank) * A @ B`. Adapted here: the query and value
projections of every stored attention block, so a block shared by all
layers (ALBERT's `sharing="all"`) has one pair of adapters, shared as the
block is. The blocks read `Dense.kernel` once per encoder call
(`SelfAttentionBlock.compute_weights`), so the low-rank product is made once
per step, not once per layer.

What a LoRA run saves is only what it trains (the adapters and the task
head) beside a reference to the backbone checkpoint (`Adapters`); loading
it back resolves the reference and merges the adapters into the kernels
(`merged_arrays`), so that a served or distilled model has no LoRA left.
"""

import dataclasses

import numpy as np

from albert_tf.sharing import sharing_plan

# The projections adapted in each attention block (keras-hub's targets
# "query" and "value"), and the names Keras gives an adapter's two factors.
TARGETS = ("query", "value")
FACTORS = ("lora_kernel_a", "lora_kernel_b")
BYTES_PER_PARAMETER = 4  # saved as float32


@dataclasses.dataclass(frozen=True)
class Adapters:
    """The LoRA of a model folder: rank, alpha and the backbone checkpoint adapted.

    backbone: the checkpoint the adapters were trained on (a path, made
        absolute when saved, or a published checkpoint name).
    """

    rank: int
    alpha: float
    backbone: str

    @property
    def scale(self):
        return self.alpha / self.rank

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values, source):
        try:
            return cls(rank=int(values["rank"]), alpha=float(values["alpha"]),
                       backbone=str(values["backbone"]))
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{source}: 'lora' must hold rank, alpha and backbone, "
                             f"got {values!r}") from None


def adapted_layers(backbone):
    """The `Dense` layers LoRA adapts: query and value of every stored attention block."""
    return [getattr(block, target) for block in backbone.attention_blocks for target in TARGETS]


def is_adapter(name):
    """Whether a variable name (`attention_0/query/lora_kernel_a`) is a LoRA factor."""
    return name.rsplit("/", 1)[-1] in FACTORS


def enable_lora(backbone, rank, alpha=None):
    """Freezes every weight of `backbone` and adds rank-`rank` adapters to
    its query and value projections (call it under the strategy's scope,
    after the pretrained weights are loaded, before compiling)."""
    if rank < 1:
        raise ValueError(f"lora rank must be >= 1, got {rank}")
    for variable in backbone.weights:
        variable.trainable = False
    for layer in adapted_layers(backbone):
        layer.enable_lora(rank, lora_alpha=alpha)
    return backbone


def lora_enabled(backbone):
    return any(layer.lora_enabled for layer in adapted_layers(backbone))


def adapter_parameters(config, rank):
    """LoRA parameters of a model: `rank x (in + out)` per adapted matrix,
    one pair per stored attention module (as many as the sharing plan stores)."""
    modules = sharing_plan(config).num_attention_modules
    return modules * len(TARGETS) * rank * (config.hidden_dim + config.hidden_dim)


def _variables(model):
    """Variable name (its Keras path, as checkpoints name it) -> variable."""
    return {v.path: v for v in model.weights}


def trained_arrays(model):
    """`{name: float32 array}` of what a LoRA run trains and saves: the adapters and the head."""
    return {name: np.asarray(v.numpy(), np.float32)
            for name, v in _variables(model).items() if v.trainable}


def merged_arrays(model):
    """Every weight of a LoRA model with the adapters merged: each adapted
    kernel is the one the layer computes with (`Dense.kernel`, Keras' own
    `kernel + alpha / rank * A @ B`), and the factors themselves are left out."""
    merged = {layer.path + "/kernel": layer.kernel for layer in adapted_layers(model.backbone)}
    return {name: np.asarray(merged.get(name, v).numpy(), np.float32)
            for name, v in _variables(model).items() if not is_adapter(name)}


def size_report(model, rank):
    """One line: trainable parameters (adapters, head) and their saved size
    against the frozen backbone's."""
    variables = _variables(model)
    adapters = sum(int(np.prod(v.shape)) for n, v in variables.items() if is_adapter(n))
    head = sum(int(np.prod(v.shape)) for n, v in variables.items()
               if v.trainable and not is_adapter(n))
    frozen = sum(int(np.prod(v.shape)) for v in variables.values() if not v.trainable)
    return (f"lora: rank {rank}, {adapters:,} adapter parameters + {head:,} in the head trained "
            f"and saved ({size_text((adapters + head) * BYTES_PER_PARAMETER)}), against the "
            f"frozen backbone's {frozen:,} ({size_text(frozen * BYTES_PER_PARAMETER)}), which "
            "model/ references instead of copying")


def size_text(num_bytes):
    """A size as people read it: 3 significant digits in B, kB, MB or GB (a
    tiny model's adapters are kilobytes, not "0.0 MB")."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if num_bytes >= scale:
            return f"{num_bytes / scale:.3g} {unit}"
    return f"{num_bytes:,} B"
