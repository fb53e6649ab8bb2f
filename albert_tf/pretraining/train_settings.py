"""`PretrainSettings`: what a pretraining run reads (no TensorFlow import)."""

import dataclasses
import json
import os

from albert_tf.io_utils import atomic_file

SETTINGS_FILE = "pretrain_settings.json"


@dataclasses.dataclass(frozen=True)
class PretrainSettings:
    """Defaults: google-research/albert `run_pretraining.py` (LAMB, lr 0.00176
    for batch 4096, 125k steps, 3,125 warmup steps, 20 predictions per sequence)."""

    input_files: str
    output_dir: str
    model: str = "albert_base"
    init_checkpoint: str | None = None
    init_from_group0: bool = False
    spm_model: str | None = None
    max_seq_length: int = 512
    max_predictions_per_seq: int = 20
    batch_size: int = 4096
    train_steps: int = 125_000
    warmup_steps: int = 3_125
    learning_rate: float = 0.00176
    optimizer: str = "lamb"
    weight_decay: float = 0.01
    clip_norm: float = 1.0
    accumulation_steps: int = 1
    recompute: bool = False
    seed: int = 12345
    strategy: str = "auto"
    tpu: str = ""
    precision: str = "auto"
    xla: str = "auto"
    checkpoint_every: int = 1000
    keep_checkpoints: int = 3
    log_every: int = 100
    divergence_factor: float = 100.0
    eval_files: str | None = None
    eval_batches: int = 50

    def __post_init__(self):
        if self.batch_size % self.accumulation_steps:
            raise ValueError(f"batch_size={self.batch_size} must be divisible by "
                             f"accumulation_steps={self.accumulation_steps}")
        if not 0 <= self.warmup_steps <= self.train_steps:
            raise ValueError(f"warmup_steps={self.warmup_steps} must be in "
                             f"[0, train_steps={self.train_steps}]")
        if self.init_from_group0 and not self.init_checkpoint:
            raise ValueError("init_from_group0 needs init_checkpoint")

    def save(self):
        with atomic_file(os.path.join(self.output_dir, SETTINGS_FILE)) as f:
            json.dump(dataclasses.asdict(self), f, indent=2, sort_keys=True)
