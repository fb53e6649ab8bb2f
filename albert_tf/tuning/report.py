"""The search's table of trials (Markdown, CSV, JSON) and its plot (PNG).

One row per finished trial, complete ones sorted by the metric (best first:
the mean over the trial's seeds, with their sample sd), pruned ones after;
`restarts` and `collapsed` name the seeds restarted after a collapse and those
that ended collapsed (`--collapse_restarts`); `folder` names each trial's
folder, and the first row is the best trial.
"""

import csv
import json
import math
import os

from albert_tf.io_utils import atomic_file

TABLE = "trials"
PLOT = "metric_vs_params.png"


def rows(records, parameters, metric, maximize, folder):
    """The table's rows from `{number: record}` (see `study.run_search`)."""
    table = []
    for number, record in records.items():
        if record is None:
            continue
        table.append({"trial": number, "state": record["state"],
                      **{p.name: record["params"].get(p.name) for p in parameters},
                      metric: record.get("value"), f"{metric}_sd": record.get("sd"),
                      "seeds": record.get("values", {}),
                      "restarts": record.get("restarts", {}),
                      "collapsed": record.get("collapsed", {}),
                      "folder": os.path.join(folder, f"trial-{number}")})
    complete = sorted((r for r in table if r[metric] is not None),
                      key=lambda r: -r[metric] if maximize else r[metric])
    return complete + [r for r in table if r[metric] is None]


def _cell(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return " ".join(f"{k}:{v:.4f}" if isinstance(v, float) else f"{k}:{v}"
                        for k, v in value.items()) or "-"
    return str(value)


def write_table(table, parameters, metric, folder):
    """Writes `trials.md`, `trials.csv`, `trials.json`; returns their paths."""
    columns = ["trial", "state", *(p.name for p in parameters), metric, f"{metric}_sd",
               "seeds", "restarts", "collapsed", "folder"]
    paths = [os.path.join(folder, f"{TABLE}.{ext}") for ext in ("md", "csv", "json")]
    with atomic_file(paths[0], encoding="utf-8") as f:
        f.write("| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n")
        f.writelines("| " + " | ".join(_cell(r[c]) for c in columns) + " |\n" for r in table)
    with atomic_file(paths[1], encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, columns)
        writer.writeheader()
        writer.writerows({c: "" if r[c] is None else json.dumps(r[c]) if isinstance(r[c], dict)
                          else r[c] for c in columns} for r in table)
    with atomic_file(paths[2], encoding="utf-8") as f:
        json.dump({"metric": metric, "columns": columns, "rows": table,
                   "best": table[0]["folder"] if table and table[0][metric] is not None
                   else None}, f, indent=2)
    return paths


def write_plot(table, parameters, metric, folder):
    """`metric_vs_params.png`: the metric (mean, and sd bars over seeds) against
    each parameter, one panel per parameter; returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = os.path.join(folder, PLOT)
    done = [r for r in table if r[metric] is not None]
    figure, axes = plt.subplots(1, len(parameters), figsize=(4 * len(parameters), 3.4),
                                squeeze=False)
    for ax, parameter in zip(axes[0], parameters):
        if parameter.kind == "choice":
            labels = [str(c) for c in parameter.choices]
            xs = [labels.index(str(r[parameter.name])) for r in done]
            ax.set_xticks(range(len(labels)), labels)
        else:
            xs = [r[parameter.name] for r in done]
            ax.set_xscale("log" if parameter.kind == "log" else "linear")
        sds = [0 if r[f"{metric}_sd"] is None or math.isnan(r[f"{metric}_sd"])
               else r[f"{metric}_sd"] for r in done]
        ax.errorbar(xs, [r[metric] for r in done], yerr=sds, fmt="o", capsize=3)
        for x, r in zip(xs, done):
            ax.annotate(str(r["trial"]), (x, r[metric]), fontsize=7)
        ax.set(xlabel=parameter.name, ylabel=f"dev {metric}")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
