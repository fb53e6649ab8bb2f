"""`FinetuneSettings`: everything a fine-tuning run reads, resolved once.

One override path: field defaults -> the task's recipe (configs/) -> an
optional JSON config file -> command-line flags. The resolved settings are
saved as `settings.json` in the output folder, which is what a resumed run
reads back.
"""

import dataclasses
import json
import os

from albert_tf.config import read_json
from albert_tf.io_utils import atomic_file

SETTINGS_FILE = "settings.json"
RECIPE_FIELDS = ("learning_rate", "batch_size", "train_steps", "warmup_steps",
                 "max_seq_length", "dropout", "classifier_dropout")


@dataclasses.dataclass(frozen=True)
class FinetuneSettings:
    task: str
    output_dir: str
    data_dir: str | None = None
    init_checkpoint: str | None = None
    model: str = "albert_base"  # preset or config file, for a random initialisation
    spm_model: str | None = None
    # The task's recipe (filled from configs/finetune_recipes.json).
    learning_rate: float = 2e-5
    batch_size: int = 32
    train_steps: int = 1000
    warmup_steps: int = 100
    max_seq_length: int = 512
    dropout: float = 0.0
    classifier_dropout: float = 0.1
    # Optimisation.
    optimizer: str = "adamw"
    weight_decay: float = 0.01
    clip_norm: float = 1.0
    accumulation_steps: int = 1
    recompute: bool = False  # recompute encoder layers in the backward pass (less memory)
    seed: int = 12345
    length_aware_batching: bool = True
    fixed_padding: bool = False  # pad every batch to max_seq_length (fixed-shape pipelines)
    # Devices.
    strategy: str = "auto"
    tpu: str = ""
    precision: str = "auto"
    xla: str = "auto"
    # Run control.
    do_train: bool = True
    do_eval: bool = True
    do_predict: bool = False
    export: bool = False
    eval_batch_size: int = 64
    checkpoint_every: int = 500
    keep_checkpoints: int = 3
    log_every: int = 50
    divergence_factor: float = 100.0
    task_options: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        for name in ("batch_size", "train_steps", "max_seq_length", "accumulation_steps",
                     "eval_batch_size", "checkpoint_every", "keep_checkpoints", "log_every"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not 0 <= self.warmup_steps <= self.train_steps:
            raise ValueError(f"warmup_steps={self.warmup_steps} must be in "
                             f"[0, train_steps={self.train_steps}]")
        if self.batch_size % self.accumulation_steps:
            raise ValueError(f"batch_size={self.batch_size} must be divisible by "
                             f"accumulation_steps={self.accumulation_steps}")
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be positive, got {self.learning_rate}")
        for name in ("dropout", "classifier_dropout"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"{name} must be in [0, 1), got {getattr(self, name)}")
        if self.recompute and self.dropout:
            raise ValueError(f"recompute needs dropout=0 (a recomputed layer would draw new "
                             f"dropout masks), got dropout={self.dropout}")

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)

    def to_dict(self):
        return dataclasses.asdict(self)

    def save(self, directory):
        with atomic_file(os.path.join(directory, SETTINGS_FILE)) as f:
            json.dump(self.to_dict(), f, indent=2, sort_keys=True)


FIELDS = tuple(f.name for f in dataclasses.fields(FinetuneSettings))


def _checked(values, source):
    unknown = sorted(set(values) - set(FIELDS))
    if unknown:
        raise ValueError(f"{source}: unknown setting(s) {unknown}")
    return values


def resolve(task, overrides, config_file=None):
    """Settings for `task`: defaults, its recipe, `config_file`, then `overrides`.

    Args:
        task: the registered task (its `recipe` supplies the recipe fields).
        overrides: settings given explicitly (e.g. flags the user set).
        config_file: optional JSON object of settings.
    """
    values = {name: getattr(task.recipe, name) for name in RECIPE_FIELDS}
    if config_file:
        values.update(_checked(read_json(config_file), config_file))
    values.update(_checked(overrides, "flags"))
    values["task"] = task.name
    return FinetuneSettings(**values)


def load_saved(output_dir):
    """The settings saved in `output_dir`, or None if it holds no run."""
    path = os.path.join(output_dir, SETTINGS_FILE)
    if not os.path.isfile(path):
        return None
    return FinetuneSettings(**_checked(read_json(path), path))


def differences(saved, given):
    """Fields where `given` (a dict of explicit settings) differs from `saved`."""
    return {k: (getattr(saved, k), v) for k, v in given.items() if getattr(saved, k) != v}
