"""Hyperparameter search on Optuna, behind `python -m albert_tf.search`.

- `space`: the `--space` string parsed into parameters of the fine-tuning settings.
- `settings`: `SearchSettings` (trials, seeds per trial, sampler, pruning).
- `study`: the Optuna study in `study.db` (SQLite) and the resumable loop of trials,
  each a variant of `albert_tf.training.variant_runner.VariantRunner`.
- `watch`: a trial's fine-tuning process followed through its `eval_history.jsonl`,
  stopped with SIGTERM when the pruner says so.
- `report`: the table of trials (Markdown, CSV, JSON) and the plot of the metric
  against each parameter.
"""
