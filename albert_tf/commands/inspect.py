"""Prints parameters, FLOPs and activation memory per component; measures.

    python -m albert_tf.inspect --model=albert_base [--sharing=all] [--seq_length=512]
        [--measure [--batch_size=8] [--repeats=10] [--warmup=3]]
    python -m albert_tf.inspect --hidden_states --init_checkpoint=CHECKPOINT --input=texts.txt
        [--output=DIR] [--compare=OTHER_CHECKPOINT]

With no `--sharing`, every sharing mode is shown side by side: the point is
that sharing divides the parameters that are stored, not the computation or
the activation memory, which stay the same for every mode. `--measure` times
a forward pass and a training step of each mode (and of the unshared model,
the baseline of the ratios) at the same shapes on this machine
(`albert_tf.measure`).

`--hidden_states` measures what each layer of a checkpoint (any layout
`load_pretrained` reads) does to the hidden states of the texts (one per line,
`[CLS] text [SEP]` with the checkpoint's own vocabulary): the distance and
angle between each layer's input and output, and each layer's similarity to
the final one (`albert_tf.hidden_states`); `--output` writes
`hidden_states.json` and `hidden_states.png` (with `--compare`, both models on
one plot, and the other's numbers in `hidden_states_compare.json`).
"""

import os
import sys

from albert_tf import accounting, extras
from albert_tf.commands import cli
from albert_tf.commands.inspect_settings import InspectSettings
from albert_tf.commands.program import Flags, Program
from albert_tf.config import SHARING_MODES, AlbertConfig, preset_names

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


def _configs(base, modes):
    return [base.replace(sharing=m, num_groups=1 if m == "none" else base.num_groups)
            for m in modes]


def report(base, seq_length, modes, heads=False, activation_dtype="float32", name="model"):
    """The report as text, one column per sharing mode."""
    configs = _configs(base, modes)
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


def _load_base(settings):
    if os.path.isfile(settings.model):
        config = AlbertConfig.from_json_file(settings.model)
    elif settings.model in preset_names():
        config = AlbertConfig.preset(settings.model)
    else:
        raise ValueError(f"--model={settings.model!r} is neither a config file nor a preset "
                         f"({', '.join(preset_names())})")
    overrides = {k: getattr(settings, k) for k in ("num_layers", "num_groups",
                                                "num_inner_repetitions")
                 if getattr(settings, k) is not None}
    return config.replace(sharing="all", **overrides)


def _measure(settings, base, modes):
    from albert_tf import measure

    cli.load_tensorflow()  # (--measure and --hidden_states only: the report needs none)
    modes = modes + ([] if "none" in modes else ["none"])  # the baseline of the ratios
    configs = _configs(base, modes)
    dtype = None if settings.activation_dtype == "float32" else f"mixed_{settings.activation_dtype}"
    jit = measure.resolve_jit(settings.xla)
    print(f"measuring {', '.join(modes)}: {settings.warmup} + {settings.repeats} calls each ...",
          file=sys.stderr, flush=True)
    timings = measure.measure_configs(configs, settings.batch_size, settings.seq_length,
                                      settings.warmup, settings.repeats, dtype, jit)
    flops = [accounting.total(accounting.component_costs(c, settings.seq_length),
                              accounting.COMPONENTS[:-1]).flops_per_token for c in configs]
    setup = (f"{measure.machine_description()}, {dtype or 'float32'}, "
             f"XLA {'on' if jit else 'off'}, backbone only")
    return measure.report(timings, flops, settings.batch_size, settings.seq_length, settings.warmup,
                          settings.repeats, setup)


def _hidden_states_of(settings, backbone, path, tokenizer, texts):
    """(label, statistics) of one checkpoint's backbone on `texts`."""
    from albert_tf import hidden_states
    from albert_tf.progress import Progress

    config = backbone.config
    if tokenizer.vocabulary_size > config.vocabulary_size:
        raise ValueError(f"{path}: the vocabulary has {tokenizer.vocabulary_size:,} entries, "
                         f"the model's embedding {config.vocabulary_size:,}")
    sequences, cut = hidden_states.encode_texts(tokenizer, texts, config.max_sequence_length)
    if cut:
        print(f"{path}: {cut} of {len(texts)} texts cut to {config.max_sequence_length} "
              "tokens (the model's positions)", file=sys.stderr)
    with Progress(len(sequences), f"hidden states of {path}", unit="texts") as progress:
        result = hidden_states.hidden_state_statistics(
            backbone, sequences, settings.batch_size, tokenizer.pad_id, progress)
    groups = f", groups={config.num_groups}" if config.num_groups > 1 else ""
    return f"{path} (sharing={config.sharing}{groups}, L={config.num_layers})", result


def _hidden_states(settings):
    from albert_tf import hidden_states

    texts = hidden_states.read_texts(settings.input)
    if settings.output:
        extras.require("plots", "inspect --hidden_states --output (hidden_states.png)")
        os.makedirs(settings.output, exist_ok=True)
    cli.load_tensorflow()  # (--measure and --hidden_states only: the report needs none)
    from albert_tf.checkpoints import load_pretrained
    from albert_tf.tokenizer.loading import load_tokenizer

    paths = [settings.init_checkpoint] + ([settings.compare] if settings.compare else [])
    # Every tokenizer first: a missing vocabulary stops the run before any model loads.
    tokenizers = [load_tokenizer(settings.vocab_file or p, host=True) for p in paths]
    results = []
    for path, tokenizer in zip(paths, tokenizers):
        results.append(_hidden_states_of(settings, load_pretrained(path), path, tokenizer, texts))
        print(hidden_states.format_table(*results[-1]) + "\n")
    if settings.output:
        for (_, result), name in zip(results, ("hidden_states", "hidden_states_compare")):
            hidden_states.write_json(result, os.path.join(settings.output, f"{name}.json"))
        hidden_states.plot(results, os.path.join(settings.output, "hidden_states.png"))
        print(f"wrote {settings.output}/hidden_states.json and hidden_states.png")


def run(settings):
    if settings.hidden_states:
        _hidden_states(settings)
        return
    base = _load_base(settings)
    if settings.measure and settings.seq_length > base.max_sequence_length:
        raise ValueError(f"--seq_length={settings.seq_length} is more than the model's "
                         f"max_sequence_length={base.max_sequence_length} (--measure runs "
                         "the model)")
    modes = [settings.sharing] if settings.sharing else list(SHARING_MODES)
    print(report(base, settings.seq_length, modes, settings.heads,
                 settings.activation_dtype, name=os.path.basename(settings.model)))
    if settings.measure:
        print("\n" + _measure(settings, base, modes), flush=True)


PROGRAM = Program("inspect", run, Flags(InspectSettings))
