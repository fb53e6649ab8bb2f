"""`PretrainSettings`: what a pretraining run reads (no TensorFlow import)."""

import dataclasses

from albert_tf.settings import POSITIVE, redefault, setting
from albert_tf.training.settings import TrainingSettings

# The sentence tasks a pretraining head trains on (the ablation grid adds "none").
SENTENCE_TASKS = ("nsp", "sop")

SETTINGS_FILE = "pretrain_settings.json"


@dataclasses.dataclass(frozen=True, kw_only=True)
class PretrainSettings(TrainingSettings):
    """Defaults: google-research/albert `run_pretraining.py` (LAMB, lr 0.00176
    for batch 4096, 125k steps, 3,125 warmup steps, 20 predictions per sequence)."""

    input_files: str = setting(
        help="TFRecord files (comma-separated globs) from create_pretraining_data.",
        roles=("reads",))
    init_from_group0: bool = setting(
        False, "Initialise every layer group from group 0 of --init_checkpoint.")
    max_predictions_per_seq: int = setting(20, "Masked positions per sequence in the records.",
                                           rule=POSITIVE)
    sentence_task: str = setting(
        "sop", "The sentence task the records' labels are (create_pretraining_data "
        "--random_next_sentence writes NSP's): names the sentence head's figures on the "
        "progress line, in pretrain_results.json and eval_history.jsonl (nsp_accuracy, not "
        "sop_accuracy, for NSP records).", choices=SENTENCE_TASKS, roles=("resumable",))
    eval_files: str | None = setting(None, "TFRecords for MLM/SOP accuracy after training "
                                     "(and, with --init_checkpoint, before it: the "
                                     "checkpoint's own scores, `eval_init_checkpoint`).",
                                     roles=("reads",))
    eval_batches: int = setting(50, "Batches of --eval_files evaluated.", rule=POSITIVE)
    eval_every: int | None = setting(
        None, "Also score --eval_files every N updates while training: each result a line of "
        "eval_history.jsonl, the latest on the progress line (held-out sentence accuracy "
        "beside its majority baseline: a head that learns its training batches by heart "
        "shows here).", rule=POSITIVE, roles=("resumable",))

    vocab_file: str | None = setting(
        None, "The vocabulary (a SentencePiece .model): sets the model's vocabulary size and "
        "is shipped with the result.", aliases=("spm_model",), roles=("reads",))
    batch_size: int = redefault(TrainingSettings, "batch_size", 4096)
    train_steps: int = redefault(TrainingSettings, "train_steps", 125_000)
    warmup_steps: int = redefault(TrainingSettings, "warmup_steps", 3_125)
    learning_rate: float = redefault(TrainingSettings, "learning_rate", 0.00176)
    optimizer: str = redefault(TrainingSettings, "optimizer", "lamb")
    checkpoint_every: int = redefault(TrainingSettings, "checkpoint_every", 1000)
    log_every: int = redefault(TrainingSettings, "log_every", 100)

    def checks(self):
        return (*super().checks(),
                ("eval_every", self.eval_every is None or bool(self.eval_files),
                 "unset without --eval_files (the held-out records it scores)"),
                ("init_from_group0", not self.init_from_group0 or bool(self.init_checkpoint),
                 "false without init_checkpoint"),
                (not (self.model and self.init_checkpoint and not self.init_from_group0),
                 "give --model (a new model) or --init_checkpoint (continue from it), not both; "
                 "--init_from_group0 grows --model from the checkpoint"))
