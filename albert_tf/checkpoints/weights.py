"""Strict assignment of named source tensors to model variables.

Each checkpoint format lists `Entry`s: our variable name (its Keras path,
e.g. `attention_0/query/kernel`), the tensor's name in that format, and how
its layout differs from ours. `assign` then checks that every model variable
gets a tensor of the right shape and that every source tensor is used or
deliberately skipped, and names all offenders at once.
"""

import dataclasses

import numpy as np

ATTENTION_PARTS = ("query/kernel", "query/bias", "key/kernel", "key/bias", "value/kernel",
                   "value/bias", "output/kernel", "output/bias", "layer_norm/gamma",
                   "layer_norm/beta")
FFN_PARTS = ("intermediate/kernel", "intermediate/bias", "output/kernel", "output/bias",
             "layer_norm/gamma", "layer_norm/beta")


class CheckpointError(ValueError):
    """A checkpoint does not fit the model it is loaded into."""


@dataclasses.dataclass(frozen=True)
class Entry:
    """One variable: our name, the source's name, and the layout change.

    layout: "same"; "transpose" (a 2-D matrix stored (out, in), as PyTorch
    does); or "reshape" (same values in another shape, e.g. keras-hub's
    per-head attention kernels).
    """

    name: str
    key: str
    layout: str = "same"


def to_ours(array, layout, shape):
    if layout == "transpose":
        array = array.T
    elif layout == "reshape" and array.size == int(np.prod(shape)):
        array = array.reshape(shape)
    return np.ascontiguousarray(array)


def from_ours(array, layout):
    if layout == "transpose":
        return np.ascontiguousarray(array.T)
    if layout != "same":
        raise ValueError(f"cannot write layout {layout!r}")
    return np.ascontiguousarray(array)


def model_variables(model):
    """Our variable name -> variable, for every distinct weight of `model`."""
    out = {}
    for v in model.weights:
        out.setdefault(v.path, v)
    return out


def _listing(title, items, limit=12):
    items = sorted(items)
    shown = "\n    ".join(items[:limit])
    more = f"\n    ... and {len(items) - limit} more" if len(items) > limit else ""
    return f"  {title} ({len(items)}):\n    {shown}{more}"


def assign(model, tensors, entries, source, skip=lambda key: False, only=None):
    """Assigns `tensors` (source name -> array) to `model` through `entries`.

    `only`: a predicate on our variable names; the others are left as they are.

    Raises:
        CheckpointError: listing model variables with no tensor, source tensors
            that nothing uses (and `skip` does not accept), and shape mismatches.

    Returns:
        The sorted source names that were skipped.
    """
    variables = {n: v for n, v in model_variables(model).items() if only is None or only(n)}
    by_name = {e.name: e for e in entries}
    missing, mismatched, values = [], [], {}
    for name, var in variables.items():
        entry = by_name.get(name)
        if entry is None or entry.key not in tensors:
            missing.append(f"{name} (expected {entry.key if entry else 'no mapping'})")
            continue
        array = to_ours(np.asarray(tensors[entry.key]), entry.layout, tuple(var.shape))
        if tuple(array.shape) != tuple(var.shape):
            note = " (stored transposed)" if entry.layout == "transpose" else ""
            mismatched.append(f"{entry.key}: checkpoint {tuple(tensors[entry.key].shape)}"
                              f"{note}, model {name} {tuple(var.shape)}")
            continue
        values[name] = array
    used = {by_name[n].key for n in variables if n in by_name}
    leftover = [k for k in tensors if k not in used]
    skipped = sorted(k for k in leftover if skip(k))
    unexpected = sorted(k for k in leftover if not skip(k))
    if missing or mismatched or unexpected:
        parts = [f"{source} does not fit the model:"]
        if mismatched:
            parts.append(_listing("shape mismatches", mismatched))
        if missing:
            parts.append(_listing("missing from the checkpoint", missing))
        if unexpected:
            parts.append(_listing("unexpected in the checkpoint", unexpected))
        raise CheckpointError("\n".join(parts))
    for name, array in values.items():
        variables[name].assign(array.astype(variables[name].dtype))
    return skipped


def group_layout_blocks(config):
    """(module index, group, inner) for formats that store whole blocks.

    Google and Hugging Face store `group_g / inner_k`; with `sharing="all"`
    our module `g*K + k` is that block. `sharing="none"` is written as one
    group per layer (see `config._grouped_layout`).
    """
    if config.sharing not in ("all", "none"):
        raise CheckpointError(
            f"sharing={config.sharing!r} has no group/inner-block layout in this format")
    inner = config.num_inner_repetitions
    groups = config.num_groups if config.sharing == "all" else config.num_layers
    return [(g * inner + k, g, k) for g in range(groups) for k in range(inner)]
