"""The model card of a fine-tuned model folder: `README.md` with Hugging Face's metadata.

Every model folder a fine-tuning run writes (`model/`, `best/`) gets a
`README.md` whose YAML front matter is what `huggingface_hub.ModelCard.load`
reads (`language`, `pipeline_tag`, `base_model`, `tags`, and the dev results as
`model-index`), and whose text says what the model is: its task and language,
the checkpoint it started from, the data files it read with their SHA-256, the
settings, the dev results beside their baselines, the mean +- sd over seeds
(or folds) once the set is done, its intended use and its limits. `export`
adds the export's variants and their sizes.

The facts the card is made of are kept beside it (`model_card.json`), so that
whoever adds to it (a set's summary, an export) renders it again from them;
the card itself is written, never edited.
"""

import hashlib
import json
import os

from albert_tf.io_utils import atomic_file

CARD_FILE = "README.md"
FACTS_FILE = "model_card.json"
# The settings the card's table shows (all of them are in albert_tf_config.json).
SHOWN_SETTINGS = ("init_checkpoint", "model", "vocab_file", "max_seq_length", "batch_size",
                  "learning_rate", "train_steps", "warmup_steps", "num_epochs", "dropout",
                  "classifier_dropout", "seed", "deterministic", "precision", "lora_rank",
                  "keep_best", "best_metric", "collapse_restarts", "task_options")
LIST_SHOWN = 20  # data files listed one by one; more are summed up


def file_hashes(paths):
    """`[{"path", "bytes", "sha256"}]` of the files `paths` (folders walked), sorted."""
    found = []
    for path in paths:
        if os.path.isdir(path):
            found += [os.path.join(root, name) for root, _, names in os.walk(path)
                      for name in names]
        elif os.path.isfile(path):
            found.append(path)
    entries = []
    for path in sorted(set(os.path.abspath(p) for p in found)):
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        entries.append({"path": path, "bytes": os.path.getsize(path),
                        "sha256": digest.hexdigest()})
    return entries


def tree_bytes(path):
    """The bytes of a file, or of every file under a folder."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(root, name))
               for root, _, names in os.walk(path) for name in names)


def add_export(folder, export_dir, variants):
    """Adds an export (`export_dir`, its `variants`: name -> path) to the card of
    the model folder `folder`, with each variant's size; the SavedModel is what the
    export folder holds besides them. False when the folder has no card."""
    sizes = {name: tree_bytes(path) for name, path in variants.items()}
    sizes = {"saved_model": tree_bytes(export_dir) - sum(sizes.values()), **sizes}
    facts = read_facts(folder)
    if facts is None:
        return False
    exports = [e for e in facts.get("exports") or [] if e["folder"] != export_dir]
    return update(folder, exports=[*exports, {"folder": export_dir, "variants": sizes}])


def read_facts(folder):
    path = os.path.join(folder, FACTS_FILE)
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write(folder, facts):
    """Writes `facts` and the card made of them into `folder`."""
    with atomic_file(os.path.join(folder, FACTS_FILE), encoding="utf-8") as f:
        json.dump(facts, f, indent=2, sort_keys=True, default=str)
    with atomic_file(os.path.join(folder, CARD_FILE), encoding="utf-8") as f:
        f.write(render(facts))


def update(folder, **changes):
    """Adds `changes` to the facts of the card in `folder` and writes it again;
    False when the folder has no card."""
    facts = read_facts(folder)
    if facts is None:
        return False
    write(folder, {**facts, **changes})
    return True


def _numbers(metrics):
    return {k: v for k, v in metrics.items() if isinstance(v, (int, float))
            and not isinstance(v, bool) and k != "examples"}


def metadata(facts):
    """The card's YAML front matter, as `huggingface_hub.ModelCardData` writes it."""
    from huggingface_hub import EvalResult, ModelCardData

    kind = facts.get("pipeline_tag") or "other"
    results = []
    for split, metrics in (facts.get("results") or {}).items():
        for name, value in _numbers(metrics).items():
            if not name.startswith("baseline_"):
                results.append(EvalResult(task_type=kind, dataset_type=facts["task"],
                                          dataset_name=facts["task"], dataset_split=split,
                                          metric_type=name, metric_name=name,
                                          metric_value=float(value)))
    base = facts.get("base_model")
    data = ModelCardData(
        language=facts.get("language"), library_name="albert_tf",
        pipeline_tag=facts.get("pipeline_tag"), base_model=base,
        tags=["albert", "albert_tf", facts["task"]], model_name=facts["name"],
        eval_results=results or None)
    return data.to_yaml()


def _cell(value):
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) >= 1e-3 or value == 0 else f"{value:.3g}"
    return "-" if value is None or value == "" else str(value).replace("|", "\\|")


def _data_lines(files):
    lines = ["| file | bytes | SHA-256 |", "|---|---|---|"]
    lines += [f"| `{f['path']}` | {f['bytes']:,} | `{f['sha256']}` |"
              for f in files[:LIST_SHOWN]]
    if len(files) > LIST_SHOWN:
        rest = files[LIST_SHOWN:]
        digest = hashlib.sha256("".join(f["sha256"] for f in rest).encode()).hexdigest()
        lines.append(f"| and {len(rest)} more files | {sum(f['bytes'] for f in rest):,} | "
                     f"`{digest}` (of their hashes in path order) |")
    return lines


def _result_lines(results):
    lines = ["| split | metric | value | baseline |", "|---|---|---|---|"]
    for split, metrics in results.items():
        numbers = _numbers(metrics)
        for name, value in numbers.items():
            if not name.startswith("baseline_"):
                lines.append(f"| {split} | {name} | {_cell(value)} | "
                             f"{_cell(numbers.get('baseline_' + name))} |")
    return lines


def render(facts):
    """The card: front matter, then the text."""
    settings = facts.get("settings") or {}
    lines = ["---", metadata(facts).rstrip(), "---", "",
             f"# {facts['name']}: ALBERT fine-tuned on `{facts['task']}`", "",
             f"A {facts.get('pipeline_tag') or 'task'} model fine-tuned with albert_tf "
             f"(task `{facts['task']}`, language {facts.get('language') or 'not stated'}) "
             f"from {facts['base']}."]
    if facts.get("step") is not None:
        lines += ["", f"These are the weights of update {facts['step']} (`--keep_best`'s best "
                      "evaluated step so far)."]
    lines += ["", "## Data", "", *_data_lines(facts.get("data") or [])]
    lines += ["", "## Settings", "", "| setting | value |", "|---|---|"]
    shown = {name: settings[name] for name in SHOWN_SETTINGS if name in settings}
    lines += [f"| {name} | {_cell(json.dumps(v) if isinstance(v, dict) else v)} |"
              for name, v in shown.items()]
    lines += ["", "Every setting: `albert_tf_config.json` (`settings`)."]
    if facts.get("results"):
        lines += ["", "## Results", "", *_result_lines(facts["results"])]
    if facts.get("repeats"):
        repeats = facts["repeats"]
        lines += ["", f"## Over {repeats['count']} {repeats['label']}s", "",
                  "| metric | mean ± sd | min | max |", "|---|---|---|---|"]
        lines += [f"| {metric} | {_cell(e['mean'])} ± {_cell(e['sd'])} | {_cell(e['min'])} | "
                  f"{_cell(e['max'])} |" for metric, e in repeats["metrics"].items()]
        lines += ["", f"This folder is {repeats['label']} {repeats['this']}'s model."]
    lines += ["", "## Intended use", "", *_intended(facts)]
    lines += ["", "## Limits", "", *_limits(facts, settings)]
    if facts.get("exports"):
        lines += ["", "## Exports", "", "| export | variant | size |", "|---|---|---|"]
        for export in facts["exports"]:
            lines += [f"| `{export['folder']}` | {name} | {size:,} bytes |"
                      for name, size in export["variants"].items()]
    return "\n".join(lines) + "\n"


def _intended(facts):
    return [f"Predictions for task `{facts['task']}` on text like the data above, through "
            "`albert-tf predict`, `albert-tf serve` or an export of this folder. It is a "
            "research model: check it on your own data before any use that matters."]


def _limits(facts, settings):
    limits = [f"- Inputs are cut at {settings.get('max_seq_length', '?')} tokens (or windowed, "
              "as the task's options say); text unlike the training data (another domain, "
              "language or style) is outside what the results above measure."]
    if not settings.get("init_checkpoint"):
        limits.append("- Trained from random weights (no pretrained checkpoint): expect "
                      "results near the baselines.")
    if not facts.get("repeats"):
        limits.append("- The results are of one run: small data sets swing by several points "
                      "between seeds (`--seeds` measures the spread).")
    if facts.get("collapsed"):
        c = facts["collapsed"]
        limits.append(f"- **Collapsed**: {c['what']} on {c['split']} at step {c['step']}; "
                      "the model predicts no better than its baseline.")
    if len(facts.get("attempts") or []) > 1:
        limits.append(f"- Restarted {len(facts['attempts']) - 1} time(s) after a collapse; "
                      "this is the last attempt (`eval_results.json` lists them).")
    return limits
