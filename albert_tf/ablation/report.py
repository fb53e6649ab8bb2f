"""The grid's table (Markdown, CSV, JSON) and plots (PNG).

One row per variant. Costs are computed from the variant's config
(`albert_tf.accounting`): unique parameters of the backbone (what sharing
divides), forward FLOPs per token and activation memory per example with the
pretraining heads, at the grid's sequence length (what sharing leaves
alone). Throughput is measured: pretraining tokens (sequence positions) per
second on this machine. Accuracies are on held-out text, each beside its
baseline and balanced accuracy (see `NOTES`).
"""

import csv
import json
import os

from albert_tf import accounting
from albert_tf.io_utils import atomic_file
from albert_tf.pretraining import sentence_scores
from albert_tf.pretraining.train_settings import SENTENCE_TASKS

AXIS_COLUMNS = ("sharing", "embedding_dim", "num_layers", "hidden_dim", "sentence_task", "seed")
COST_COLUMNS = ("params", "flops_per_token", "activation_mib")
SENTENCE_COLUMNS = tuple(f"{task}_{k}" for task in SENTENCE_TASKS
                         for k in ("accuracy", "baseline", "balanced_accuracy"))
RUN_COLUMNS = ("steps", "tokens_per_second", "mlm_loss", "mlm_accuracy", *SENTENCE_COLUMNS)
TIME_COLUMNS = ("pretrain_seconds", "wall_seconds")
INTRINSIC = ("mlm_loss", "mlm_accuracy", *SENTENCE_COLUMNS)
# What a row carries beside its columns: the figures the notes and cells read.
DETAILS = ("mlm_baseline", *(f"{task}_{k}" for task in SENTENCE_TASKS
                             for k in ("ci95", "examples", "scored_by")))
_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}
NOTES = (
    "params: unique backbone parameters; flops_per_token: forward FLOPs per token with the "
    "pretraining heads (a training step is about 3x); activation_mib: activations kept for "
    "the backward pass, per example, with the heads (albert_tf.accounting).",
    "tokens_per_second: measured pretraining throughput (sequence positions) on this machine.",
    "mlm_loss: held-out masked-LM cross-entropy (nats per masked token; lower is better). "
    "mlm_accuracy, nsp_*, sop_*: held-out text; every model is scored on both NSP and SOP "
    "pairs (Table 5 of the ALBERT paper): through its own sentence head (label 0, 'B follows "
    "A', means the same in both tasks), or, trained without one (sentence_task=none), "
    "through a linear probe of its pooled output fit on training pairs. Held-out pairs are "
    "cut without random-document pairs for one-sentence chunks, so SOP's label 1 is "
    "'swapped' only.",
    "*_accuracy [low-high]: the accuracy and its 95% Wilson interval; *_baseline: the more "
    "frequent label's share (always answering it scores that); *_balanced_accuracy: the mean "
    "of both labels' recalls (0.5 for a model that ignores its input).",
    "pretrain_seconds, wall_seconds (pretraining, scoring and fine-tuning): of the start of "
    "the grid that finished the variant.",
)


def cost_columns(config, seq_length, precision):
    costs = accounting.total(accounting.component_costs(config, seq_length, heads=True))
    return {"params": accounting.backbone_params(config),
            "flops_per_token": costs.flops_per_token,
            "activation_mib": costs.activation_elements * _BYTES[precision] / 2**20}


def row(variant, config, record, settings):
    """One table row from a variant's record (see `runner.run_variant`)."""
    train, scores = record["train"] or {}, record["scores"]
    return {"variant": variant.name, **variant.to_dict(),
            **cost_columns(config, settings.max_seq_length, settings.precision),
            "steps": record["steps"], "tokens_per_second": train.get("tokens_per_second"),
            **{k: scores.get(k) for k in INTRINSIC}, **record["downstream"],
            "pretrain_seconds": train.get("seconds"), "wall_seconds": record["wall_seconds"],
            "details": {k: scores.get(k) for k in DETAILS}}


def columns_of(rows):
    downstream = []
    for r in rows:
        downstream += [k for k in r if k not in downstream and k != "details"]
    fixed = ("variant", *AXIS_COLUMNS, *COST_COLUMNS, *RUN_COLUMNS, *TIME_COLUMNS)
    return [*fixed[:-2], *[k for k in downstream if k not in fixed], *TIME_COLUMNS]


def _cell(name, value, details=None):
    if value is None:
        return "-"
    interval = (details or {}).get(name.replace("_accuracy", "_ci95"))
    if name.endswith("_accuracy") and interval:
        return f"{value:.4f} [{interval[0]:.3f}-{interval[1]:.3f}]"
    if name == "params":
        return f"{value:,}"
    if name == "flops_per_token":
        return f"{value / 1e6:.2f}M"
    if isinstance(value, float):
        return f"{value:.1f}" if name.endswith(("seconds", "second", "mib")) else f"{value:.4f}"
    return str(value)


def notes(rows):
    """The table's notes: the MLM baseline (the same held-out data for every row),
    and a warning for each sentence figure too uncertain to mean anything."""
    details = [r.get("details") or {} for r in rows]
    mlm = next((d["mlm_baseline"] for d in details if d.get("mlm_baseline") is not None), None)
    extra = [] if mlm is None else [
        f"baseline on the same held-out data: MLM most frequent token {mlm:.4f}."]
    for r, d in zip(rows, details):
        extra += collapsed(r, mlm) or not_learnt(r)
        for task in SENTENCE_TASKS:
            interval = d.get(f"{task}_ci95")
            if interval and sentence_scores.too_small({"ci95": interval}):
                extra.append(
                    f"warning: {r['variant']}'s {task} accuracy is from "
                    f"{d.get(f'{task}_examples')} held-out pairs (95% interval "
                    f"{interval[0]:.3f}-{interval[1]:.3f}): too few to tell models apart; "
                    "give more text (or a larger --heldout_fraction, --eval_batches).")
    return (*NOTES, *extra)


# An MLM accuracy within this of the most frequent token's share predicts that token.
MLM_COLLAPSE_MARGIN = 0.005


def collapsed(row, mlm_baseline):
    """Warnings for a variant that learnt nothing the table could rank it by: its
    masked-LM predictions at the most-frequent-token baseline, or its own sentence
    head answering one label whatever the pair (balanced accuracy 0.5)."""
    found = []
    accuracy = row.get("mlm_accuracy")
    if mlm_baseline is not None and accuracy is not None and \
            accuracy <= mlm_baseline + MLM_COLLAPSE_MARGIN:
        found.append(f"warning: {row['variant']}'s MLM accuracy {accuracy:.4f} is the most "
                     f"frequent token's share ({mlm_baseline:.4f}): it predicts one token, a "
                     "collapsed run (another seed or a lower --learning_rate).")
    details = row.get("details") or {}
    for task in SENTENCE_TASKS:
        if details.get(f"{task}_scored_by", "").endswith("head") and \
                row.get(f"{task}_balanced_accuracy") == 0.5:
            found.append(f"warning: {row['variant']}'s sentence head answers one label "
                         f"whatever the {task} pair (balanced accuracy 0.5).")
    return found


def not_learnt(row):
    """A warning for a variant whose own sentence head is not above the baseline
    of its own task on held-out pairs (the interval's low end at or under it):
    the table cannot show its half of the paper's pattern, and says why."""
    task, details = row.get("sentence_task"), row.get("details") or {}
    interval, baseline = details.get(f"{task}_ci95"), row.get(f"{task}_baseline")
    if task not in SENTENCE_TASKS or not interval or baseline is None or \
            interval[0] > baseline:
        return []
    return [f"warning: {row['variant']}'s {task} head is not above its {task} baseline "
            f"after {row['steps']:,} updates ({row[f'{task}_accuracy']:.4f} "
            f"[{interval[0]:.3f}-{interval[1]:.3f}] against {baseline:.4f}): it has not learnt "
            "its task at this budget; more updates (--budget_seconds, --budget_steps) or more "
            "distinct text may start it (--eval_every's eval_history.jsonl shows whether it "
            "was rising)."]


def markdown(rows):
    columns = columns_of(rows)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(c, r.get(c), r.get("details")) for c in columns) + " |"
              for r in rows]
    return "\n".join(lines + [""] + [f"- {note}" for note in notes(rows)]) + "\n"


def write_table(rows, folder):
    """Writes `results.md`, `results.csv` and `results.json`; returns their paths."""
    columns = columns_of(rows)
    paths = [os.path.join(folder, f"results.{ext}") for ext in ("md", "csv", "json")]
    with atomic_file(paths[0], encoding="utf-8") as f:
        f.write(markdown(rows))
    with atomic_file(paths[1], encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, columns)
        writer.writeheader()
        writer.writerows({c: "" if r.get(c) is None else r.get(c) for c in columns}
                         for r in rows)
    with atomic_file(paths[2], encoding="utf-8") as f:
        json.dump({"columns": columns, "rows": rows, "notes": notes(rows)}, f, indent=2)
    return paths


def _scores(rows):
    """The score columns to plot: the intrinsic ones any row has, then downstream."""
    fixed = {"variant", *AXIS_COLUMNS, *COST_COLUMNS, *RUN_COLUMNS, *TIME_COLUMNS}
    names = [k for k in INTRINSIC if any(r.get(k) is not None for r in rows)]
    return names + [k for k in columns_of(rows) if k not in fixed]


def write_plots(rows, curves, folder):
    """Writes `loss_curves.png`, `score_vs_params.png`, `score_vs_flops.png`;
    `curves`: `{variant name: [(step, loss), ...]}`. Returns the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = [os.path.join(folder, n) for n in ("loss_curves.png", "score_vs_params.png",
                                                 "score_vs_flops.png")]
    figure, axes = plt.subplots(figsize=(8, 5))
    for name, curve in curves.items():
        if curve:
            axes.plot(*zip(*curve), label=name, linewidth=1)
    axes.set(xlabel="update", ylabel="training loss (MLM + sentence task; none: MLM only)",
             title="Pretraining loss per variant")
    axes.legend(fontsize="x-small")
    figure.savefig(paths[0], dpi=120, bbox_inches="tight")
    plt.close(figure)
    for path, cost, label in ((paths[1], "params", "unique parameters"),
                              (paths[2], "flops_per_token", "forward FLOPs per token")):
        _scatter(plt, rows, _scores(rows), cost, label, path)
    return paths


def _scatter(plt, rows, scores, cost, label, path):
    figure, axes = plt.subplots(1, max(len(scores), 1), figsize=(4 * max(len(scores), 1), 3.6),
                                squeeze=False)
    for ax, score in zip(axes[0], scores):
        for r in rows:
            if r.get(score) is not None:
                ax.scatter(r[cost], r[score], s=18)
                ax.annotate(r["variant"], (r[cost], r[score]), fontsize=6)
        costs = [r[cost] for r in rows]
        # A log axis only where the costs span a decade (its labels crowd otherwise).
        ax.set(xlabel=label, ylabel=score,
               xscale="log" if max(costs) > 10 * min(costs) > 0 else "linear")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
