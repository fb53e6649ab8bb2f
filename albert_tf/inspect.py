"""Prints parameters, FLOPs and activation memory per component.

    python -m albert_tf.inspect --model=albert_base [--sharing=all] [--seq_length=512]

With no `--sharing`, every sharing mode is shown side by side: the point is
that sharing divides the parameters that are stored, not the computation or
the activation memory, which stay the same for every mode.
"""

import os
import sys

from absl import app, flags

from albert_tf import accounting
from albert_tf.config import SHARING_MODES, AlbertConfig, preset_names

FLAGS = flags.FLAGS
flags.DEFINE_string("model", "albert_base",
                    "A preset name (albert_base, albert_large, albert_xlarge, albert_xxlarge) "
                    "or a path to an albert_tf config JSON.")
flags.DEFINE_enum("sharing", None, SHARING_MODES, "One sharing mode; default: all side by side.")
flags.DEFINE_integer("seq_length", 512, "Tokens per example.")
flags.DEFINE_integer("num_layers", None, "Override the preset's number of layers.")
flags.DEFINE_integer("num_groups", None, "Override the number of layer groups.")
flags.DEFINE_integer("num_inner_repetitions", None, "Override blocks per layer.")
flags.DEFINE_boolean("heads", False, "Include the MLM and SOP pretraining heads.")
flags.DEFINE_enum("activation_dtype", "float32", ["float32", "bfloat16", "float16"],
                  "Element size for activation memory.")

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
_LABELS = {"embeddings": "embeddings (V+P+T) x E", "projection": "projection E -> H",
           "attention": "attention (Q, K, V, out)", "ffn": "feed-forward",
           "layer_norms": "LayerNorms", "pooler": "pooler", "heads": "heads (MLM + SOP)"}


def _format_table(title, rows, modes, fmt):
    width = max(len(label) for label, _ in rows) + 2
    lines = [title, " " * width + "".join(f"{m:>16}" for m in modes)]
    for label, values in rows:
        lines.append(f"{label:<{width}}" + "".join(f"{fmt(x):>16}" for x in values))
    return "\n".join(lines)


def report(base, seq_length, modes, heads=False, activation_dtype="float32", name="model"):
    """The report as text, one column per sharing mode."""
    configs = [base.replace(sharing=m, num_groups=1 if m == "none" else base.num_groups)
               for m in modes]
    costs = [accounting.component_costs(c, seq_length, heads=heads) for c in configs]
    names = [n for n in accounting.COMPONENTS if heads or n != "heads"]
    totals = [accounting.total(c, names) for c in costs]

    def rows(get):
        out = [(_LABELS[n], [get(c[n]) for c in costs]) for n in names]
        return out + [("total", [get(t) for t in totals])]

    mib = _BYTES[activation_dtype] / 2**20
    b = base
    header = (f"{name}: "
              f"V={b.vocabulary_size} E={b.embedding_dim} H={b.hidden_dim} "
              f"L={b.num_layers} heads={b.num_heads} I={b.intermediate_dim} "
              f"groups={b.num_groups} inner={b.num_inner_repetitions}, seq_length={seq_length}")
    sections = [
        header,
        _format_table("Unique parameters", rows(lambda c: c.params), modes, "{:,}".format),
        _format_table("Forward FLOPs per token", rows(lambda c: c.flops_per_token), modes,
                      lambda x: f"{x / 1e6:,.2f}M"),
        _format_table("Training-step FLOPs per token (3x forward)",
                      rows(lambda c: 3 * c.flops_per_token), modes,
                      lambda x: f"{x / 1e6:,.2f}M"),
        _format_table(f"Activation memory per example ({activation_dtype}, MiB)",
                      rows(lambda c: c.activation_elements), modes,
                      lambda x: f"{x * mib:,.1f}"),
    ]
    if len(modes) > 1:
        most = max(t.params for t in totals)
        ratios = ", ".join(f"{m} {most / t.params:.1f}x fewer" for m, t in zip(modes, totals)
                           if t.params != most)
        sections.append(
            "Sharing changes what is stored, not what is computed: relative to the largest, "
            f"{ratios} parameters, with identical FLOPs and activation memory.")
    return "\n\n".join(sections)


def _load_base():
    if os.path.isfile(FLAGS.model):
        config = AlbertConfig.from_json_file(FLAGS.model)
    elif FLAGS.model in preset_names():
        config = AlbertConfig.preset(FLAGS.model)
    else:
        raise ValueError(f"--model={FLAGS.model!r} is neither a config file nor a preset "
                         f"({', '.join(preset_names())})")
    overrides = {k: getattr(FLAGS, k) for k in ("num_layers", "num_groups",
                                                "num_inner_repetitions")
                 if getattr(FLAGS, k) is not None}
    return config.replace(sharing="all", **overrides)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    try:
        base = _load_base()
        modes = [FLAGS.sharing] if FLAGS.sharing else list(SHARING_MODES)
        print(report(base, FLAGS.seq_length, modes, FLAGS.heads, FLAGS.activation_dtype,
                     name=os.path.basename(FLAGS.model)))
    except ValueError as e:
        sys.exit(f"error: {e}")


if __name__ == "__main__":
    app.run(main)
