"""The variants of an ablation grid, parsed from one string.

    sharing=all,attention,ffn,none;sentence_task=sop | sentence_task=nsp,none | seed=2

A grid is one or more sub-grids separated by `|`; each sub-grid is axes
separated by `;`, each axis `key=value,value,...`, and stands for the cross
product of its axes. An axis a sub-grid does not name keeps the base value
(the `--model` config, `--sentence_task`, `--seed`). The variants are those of
every sub-grid in order, each once, so that a sharing sweep, a sentence-task
sweep of one model and a second seed of it are one grid (the paper's Tables 4
and 5 are two such sweeps of one base model).

Depth and width: `num_layers` and `hidden_dim`; a changed `hidden_dim` keeps
the base's ratio `intermediate_dim / hidden_dim` (BERT's 4) and its head
count. With `sharing=none` the model has one group per layer by definition
(`num_groups=1`, what `AlbertConfig` asks for).
"""

import dataclasses

from albert_tf.config import SHARING_MODES
from albert_tf.pretraining.train_settings import SENTENCE_TASKS as HEAD_TASKS

SENTENCE_TASKS = ("none", *HEAD_TASKS)  # none: MLM alone
# Axis -> (parse one value, what a value must be). Ints must be >= 1.
AXES = {
    "sharing": (str, f"one of {', '.join(SHARING_MODES)}"),
    "embedding_dim": (int, "an integer >= 1"),
    "num_layers": (int, "an integer >= 1"),
    "hidden_dim": (int, "an integer >= 1"),
    "sentence_task": (str, f"one of {', '.join(SENTENCE_TASKS)}"),
    "seed": (int, "an integer >= 0"),
}
# Short names in variant folder names, in this order.
_SHORT = (("sharing", ""), ("embedding_dim", "E"), ("num_layers", "L"), ("hidden_dim", "H"),
          ("sentence_task", ""), ("seed", "seed"))


@dataclasses.dataclass(frozen=True)
class Variant:
    """One point of the grid: every axis set."""

    sharing: str
    embedding_dim: int
    num_layers: int
    hidden_dim: int
    sentence_task: str
    seed: int

    @property
    def name(self):
        """A folder name: `all-E32-L4-H64-sop-seed1`."""
        return "-".join(f"{short}{getattr(self, key)}" for key, short in _SHORT)

    @property
    def architecture(self):
        """The name's part that sets the model (its size and the cost of an update):
        `all-E32-L4-H64`; the sentence task and the seed do not."""
        return "-".join(f"{short}{getattr(self, key)}" for key, short in _SHORT
                        if key not in ("sentence_task", "seed"))

    def to_dict(self):
        return dataclasses.asdict(self)

    def config(self, base):
        """The `AlbertConfig` of this variant, from the `base` config."""
        ratio = base.intermediate_dim / base.hidden_dim
        return base.replace(
            sharing=self.sharing, embedding_dim=self.embedding_dim,
            num_layers=self.num_layers, hidden_dim=self.hidden_dim,
            intermediate_dim=max(1, round(ratio * self.hidden_dim)),
            num_groups=1 if self.sharing == "none" else base.num_groups)


def base_variant(config, sentence_task, seed):
    """The variant every axis a sub-grid leaves out falls back to."""
    return Variant(sharing=config.sharing, embedding_dim=config.embedding_dim,
                   num_layers=config.num_layers, hidden_dim=config.hidden_dim,
                   sentence_task=sentence_task, seed=seed)


def _value(key, text, where):
    kind, want = AXES[key]
    try:
        value = kind(text)
    except ValueError:
        raise ValueError(f"--grid: {key}={text!r} in {where!r}: expected {want}") from None
    ok = {"sharing": lambda v: v in SHARING_MODES,
          "sentence_task": lambda v: v in SENTENCE_TASKS,
          "seed": lambda v: v >= 0}.get(key, lambda v: v >= 1)(value)
    if not ok:
        raise ValueError(f"--grid: {key}={text!r} in {where!r}: expected {want}")
    return value


def _axes(sub_grid):
    """`{key: [values]}` of one sub-grid (`key=a,b;key=c`)."""
    axes = {}
    for part in filter(None, (p.strip() for p in sub_grid.split(";"))):
        key, sep, values = part.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--grid: {part!r} is not key=value[,value...]")
        if key not in AXES:
            raise ValueError(f"--grid: unknown key {key!r} in {part!r} (known: "
                             f"{', '.join(AXES)})")
        if key in axes:
            raise ValueError(f"--grid: {key} is given twice in {sub_grid.strip()!r}")
        texts = [v.strip() for v in values.split(",")]
        if not all(texts):
            raise ValueError(f"--grid: an empty value in {part!r}")
        axes[key] = [_value(key, t, part) for t in texts]
    return axes


def _product(base, axes):
    variants = [base]
    for key, values in axes.items():
        variants = [dataclasses.replace(v, **{key: value}) for v in variants for value in values]
    return variants


def parse_grid(spec, base):
    """The `Variant`s of grid `spec` around `base` (a `Variant`), each once, in order.

    An empty `spec` is the base alone.

    Raises:
        ValueError: a malformed part, an unknown key or a bad value, named.
    """
    variants = []
    for sub_grid in (spec or "").split("|"):
        for variant in _product(base, _axes(sub_grid)):
            if variant not in variants:
                variants.append(variant)
    return variants


def check_variants(variants, base_config):
    """Builds every variant's config (which validates itself), so that an
    impossible one (heads that do not divide the width) stops the grid before
    any work; raises ValueError naming the variant."""
    for variant in variants:
        try:
            variant.config(base_config)
        except ValueError as e:
            raise ValueError(f"--grid: variant {variant.name}: {e}") from None
