"""`run_grid(settings)`: every variant pretrained, scored, fine-tuned, tabulated.

    <output_dir>/ablation_settings.json   the grid's settings
                 data/                     records per tokenizer and sentence task
                 <variant>/pretrain/       its pretraining run (checkpoints, model/)
                 <variant>/finetune/<task> its fine-tuning runs
                 <variant>/result.json     written last: the variant is done
                 results.{md,csv,json}, loss_curves.png, score_vs_{params,flops}.png

Resumable at every level (`albert_tf.training.variant_runner.VariantRunner`, the runner
seeds, k-fold and search use too): a done variant (`result.json`) is read
back, an interrupted one continues from its checkpoints. Every variant gets the same
budget, data (made once) and, unless the grid varies `seed`, the same seed
(initialisation and data order).
"""

import json
import os
import time

from albert_tf.ablation import data, finetune, grid, pretrain, report
from albert_tf.ablation.settings import SETTINGS_FILE, AblationSettings
from albert_tf.config import AlbertConfig, preset_names
from albert_tf.training.variant_runner import VariantRunner, say
# Settings a grid started again may change: the variant list and the stop.
CHANGEABLE = ("grid", "stop_after")


def base_config(settings, vocabulary_size):
    config = (AlbertConfig.preset(settings.model) if settings.model in preset_names()
              else AlbertConfig.from_json_file(settings.model))
    config = config.replace(vocabulary_size=vocabulary_size)
    problem = config.length_problem(settings.max_seq_length)
    if problem:
        raise ValueError(f"{problem} ({settings.model})")
    return config


def check_saved(settings):
    """Raises ValueError when `output_dir` holds a grid with other settings (a
    budget or data that differ would make its variants incomparable)."""
    path = os.path.join(settings.output_dir, SETTINGS_FILE)
    if not os.path.isfile(path):
        return
    with open(path, encoding="utf-8") as f:
        saved = AblationSettings.from_dict({**json.load(f), "output_dir": settings.output_dir},
                                           path)
    conflicts = [f"{k}: saved {getattr(saved, k)!r}, given {getattr(settings, k)!r}"
                 for k in AblationSettings.field_names()
                 if k not in CHANGEABLE and getattr(saved, k) != getattr(settings, k)]
    if conflicts:
        raise ValueError(f"--output_dir={settings.output_dir} holds a grid with other settings "
                         f"({'; '.join(conflicts)}); use a new --output_dir")


def prepare(settings, get_task=None):
    """Everything checked before work starts: `(tokenizer, config, variants)`."""
    from albert_tf.tokenizer.loading import load_tokenizer

    check_saved(settings)
    tokenizer = load_tokenizer(settings.vocab_file, host=True)
    config = base_config(settings, tokenizer.vocabulary_size)
    variants = grid.parse_grid(settings.grid, grid.base_variant(config, settings.sentence_task,
                                                                settings.seed))
    grid.check_variants(variants, config)
    if settings.finetune_tasks:
        if get_task is None:
            raise ValueError("--finetune needs the task registry (run python -m albert_tf.ablate)")
        finetune.check_tasks(settings, get_task)
    return tokenizer, config, variants


def run_variant(settings, variant, config, tokenizer, data_folder, get_task, verbose, folder):
    """Pretrains, scores and fine-tunes one variant in `folder`; returns its record."""
    start = time.monotonic()
    record = pretrain.pretrain_variant(settings, variant, config, tokenizer, data_folder,
                                       folder, verbose)
    record["downstream"] = (finetune.finetune_variant(settings, variant, record["model_dir"],
                                                      folder, get_task, verbose)
                            if settings.finetune_tasks else {})
    record["wall_seconds"] = time.monotonic() - start
    record["curve"] = pretrain.loss_curve(folder)
    record["variant"] = variant.to_dict()
    return record


def run_grid(settings, get_task=None, verbose=True, log=say):
    """Runs the grid of `settings` (an `AblationSettings`); returns `(rows, paths)`:
    the table rows of the variants done and the files written.

    get_task: a function from a task name to its `tasks.base.Task` (needed
        with `settings.finetune`).
    """
    tokenizer, config, variants = prepare(settings, get_task)
    os.makedirs(settings.output_dir, exist_ok=True)
    settings.save(os.path.join(settings.output_dir, SETTINGS_FILE))
    data_folder = data.build_data(settings, tokenizer,
                                  {data.data_task(v.sentence_task) for v in variants}, log=log)
    by_name = {v.name: v for v in variants}

    def run(name, folder):
        variant = by_name[name]
        return run_variant(settings, variant, variant.config(config), tokenizer, data_folder,
                           get_task, verbose, folder)

    runner = VariantRunner(settings.output_dir, "ablation grid", log)
    found = runner.run_all(list(by_name), run, settings.stop_after)
    records = {by_name[name]: record for name, record in found.items()}
    done = [(v, r) for v, r in records.items() if r is not None]
    rows = [report.row(v, v.config(config), r, settings) for v, r in done]
    paths = report.write_table(rows, settings.output_dir)
    paths += report.write_plots(rows, {v.name: r["curve"] for v, r in done},
                                settings.output_dir)
    return rows, paths
