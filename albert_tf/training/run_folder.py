"""The layout of a training run's output folder, in one place.

    <output_dir>/settings.json        the resolved settings (pretraining: pretrain_settings.json)
                 checkpoints/          resumable checkpoints (model, optimizer, RNG state)
                 tensorboard/          scalars
                 features/             featurized splits, cached
                 eval_results.json     metrics (pretraining: pretrain_results.json)
                 eval_history.jsonl    the evaluations while training, one JSON object each
                 attempts.json         with --collapse_restarts: the attempts after a collapse
                 attempts/attempt-K/   a collapsed attempt's checkpoints, history, best/, events
                 mlflow_run.json       with --report_to=mlflow: the folder's MLflow run
                 best/                 with --keep_best: the best evaluated step's model folder
                 eval_results_step_N.json   metrics of a stopped run's checkpoint N
                                       (--do_train=false before the run finished)
                 model/                the result, in albert_tf's format with its vocabulary
                 export/<version>/     SavedModels for TF Serving
"""

import os

SETTINGS_FILE = "settings.json"
CHECKPOINT_DIR = "checkpoints"
TENSORBOARD_DIR = "tensorboard"
FEATURES_DIR = "features"
RESULTS_FILE = "eval_results.json"
HISTORY_FILE = "eval_history.jsonl"
BEST_DIR = "best"
ATTEMPTS_FILE = "attempts.json"
ATTEMPTS_DIR = "attempts"
# The results of evaluating a stopped run's checkpoint (not the run's results).
CHECKPOINT_RESULTS_FILE = "eval_results_step_{step}.json"
MODEL_DIR = "model"
EXPORT_DIR = "export"
# What tf.train.CheckpointManager writes once a checkpoint is complete.
CHECKPOINT_STATE = "checkpoint"


def has_progress(output_dir, results_file=RESULTS_FILE):
    """Whether a run in `output_dir` got anywhere: a checkpoint saved or results written.

    A run that stopped before (a wrong data path, a model that does not fit)
    leaves its settings, but nothing that its next start has to continue. A run
    restarted after a collapse (`attempts.json`) continues its attempts.
    """
    return (os.path.isfile(os.path.join(output_dir, CHECKPOINT_DIR, CHECKPOINT_STATE))
            or os.path.isfile(os.path.join(output_dir, results_file))
            or os.path.isfile(os.path.join(output_dir, ATTEMPTS_FILE)))
