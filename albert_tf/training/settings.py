"""The settings of a training run: `TrainingSettings`, and `FinetuneSettings` on it.

`TrainingSettings` holds what fine-tuning and pretraining share (the model to
start from, optimisation, devices, precision, checkpoints, logging);
`FinetuneSettings` adds the task, its data and run control, and
`albert_tf.pretraining.train_settings.PretrainSettings` the pretraining data.
Every field is declared once (`albert_tf.settings.setting`): its default, help
text and allowed values make the flags and the validation.

Fine-tuning resolves one override path: field defaults -> the task's recipe
(configs/) -> an optional JSON config file -> command-line flags. The
resolved settings are saved as `settings.json` in the output folder, with the
precision, XLA and layer execution choice that `auto` made on this machine, which is what a
resumed run reads back.
"""

import dataclasses
import math
import os

from albert_tf.io_utils import read_json
from albert_tf.settings import (CLOSED_PROBABILITY, NON_NEGATIVE, POSITIVE, POSITIVE_REAL,
                                PROBABILITY, Rule, Settings, merged, setting)

from albert_tf.training.run_folder import SETTINGS_FILE, has_progress  # noqa: F401
STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker", "tpu")
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
XLA_CHOICES = ("auto", "on", "off")
LAYER_EXECUTIONS = ("auto", "loop", "unrolled")
OPTIMIZERS = ("adamw", "lamb")
DEFAULT_MODEL = "albert_base"
# Two ways to give one quantity: (one, other); giving both is an error.
ALTERNATIVES = (("num_epochs", "train_steps"), ("warmup_proportion", "warmup_steps"))
REPORT_TO = Rule(lambda v: set(v) <= {"tensorboard", "mlflow", "none"} and bool(v)
                 and ("none" not in v or len(v) == 1),
                 "tensorboard, mlflow, both (comma-separated) or none")
EVAL_EVERY = Rule(lambda v: v == "epoch" or (isinstance(v, int) and v >= 1),
                  "a number of updates >= 1 or 'epoch'")


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainingSettings(Settings):
    """What every training run reads: starting point, optimisation, devices, checkpoints."""

    output_dir: str = setting(help="Where checkpoints, TensorBoard, results and the model go.",
                              roles=("writes",))
    init_checkpoint: str | None = setting(
        None, "A pretrained checkpoint in any format load_pretrained reads, or a published "
        "name such as albert_base_v2.", roles=("reads",))
    model: str | None = setting(
        None, "Model preset or config file of a randomly initialised model (default: "
        f"{DEFAULT_MODEL}); not with --init_checkpoint, which fixes the model. A preset and a "
        "file follow one rule: random embeddings are sized to the tokenizer's vocabulary.",
        roles=("reads",))
    vocab_file: str | None = setting(
        None, "The vocabulary: a SentencePiece .model or a WordPiece vocab.txt; default: the "
        "one shipped with --init_checkpoint. A random --model needs one too (e.g. ALBERT's "
        "30k-clean.model, or one trained with `albert-tf tokenizer train`).",
        aliases=("spm_model",), roles=("reads",))
    # Optimisation.
    learning_rate: float = setting(2e-5, "Peak learning rate.", rule=POSITIVE_REAL,
                                   roles=("recipe", "scratch"))
    batch_size: int = setting(32, "Global batch size, split across replicas.", rule=POSITIVE,
                              roles=("recipe",))
    train_steps: int = setting(1000, "Optimizer updates.", rule=POSITIVE,
                               roles=("recipe", "scratch"))
    warmup_steps: int = setting(100, "Linear warmup updates.", rule=NON_NEGATIVE,
                                roles=("recipe", "scratch"))
    max_seq_length: int = setting(512, "Longest input in tokens.", rule=POSITIVE,
                                  roles=("recipe",))
    optimizer: str = setting("adamw", "Optimizer.", choices=OPTIMIZERS)
    weight_decay: float = setting(0.01, "Decoupled weight decay (not on LayerNorm and biases).",
                                  rule=NON_NEGATIVE)
    clip_norm: float = setting(1.0, "Global gradient-norm clip.", rule=POSITIVE_REAL)
    accumulation_steps: int = setting(1, "Micro-batches per update (gradient accumulation).",
                                      rule=POSITIVE)
    recompute: bool = setting(
        False, "Recompute each encoder layer in the backward pass instead of keeping its "
        "activations: less memory, about 1.3x the step time (needs dropout 0).")
    seed: int = setting(12345, "Seed of initialisation, dropout and data order.",
                        rule=NON_NEGATIVE)
    deterministic: bool = setting(
        False, "The same command twice on the same machine gives bit-identical weights and "
        "results: TensorFlow's op determinism, every random draw from --seed, and the `auto` "
        "choices made without measuring (float32 on a CPU, XLA as the device's default, the "
        "layer loop), since timings differ between runs. Costs speed (README: Reproducible "
        "runs).")
    # Devices.
    strategy: str = setting("auto", "tf.distribute strategy; multi_worker reads TF_CONFIG.",
                            choices=STRATEGIES, roles=("resumable",))
    tpu: str = setting("", "TPU name or address (with --strategy=tpu or auto).",
                       roles=("resumable",))
    precision: str = setting("auto", "Mixed precision; auto picks the fastest measured for the "
                             "device (and the run keeps that choice when resumed).",
                             choices=PRECISIONS, roles=("auto",))
    xla: str = setting("auto", "XLA compilation; auto: on for TPUs, else measured with "
                       "--layer_execution at the start of the run (and kept when resumed).",
                       choices=XLA_CHOICES, roles=("auto",))
    layer_execution: str = setting(
        "auto", "How the encoder runs its layers: in a loop (less memory: shared weights' "
        "gradients summed as it goes) or unrolled (XLA fuses across layers); auto measures "
        "both with XLA on and off on a probe of the model and keeps the fastest; --recompute "
        "keeps the loop.", choices=LAYER_EXECUTIONS, roles=("auto",))
    # Checkpoints and logging.
    checkpoint_every: int = setting(500, "Save a resumable checkpoint every N updates.",
                                    rule=POSITIVE)
    keep_checkpoints: int = setting(3, "Checkpoints kept.", rule=POSITIVE, roles=("resumable",))
    log_every: int = setting(50, "TensorBoard scalars every N updates.", rule=POSITIVE,
                             roles=("resumable",))
    divergence_factor: float = setting(
        100.0, "Stop when the loss exceeds this multiple of the first loss.", rule=POSITIVE_REAL)

    def checks(self):
        return (
            ("output_dir", bool(self.output_dir), "a folder name"),
            # (Epochs and a warmup proportion become updates once the data is featurized.)
            ("warmup_steps", self.warmup_steps <= self.train_steps
             or getattr(self, "num_epochs", None) is not None
             or getattr(self, "warmup_proportion", None) is not None,
             f"<= train_steps={self.train_steps}"),
            ("batch_size", self.batch_size % self.accumulation_steps == 0,
             f"divisible by accumulation_steps={self.accumulation_steps}"),
            ("layer_execution", not (self.recompute and self.layer_execution == "unrolled"),
             "loop or auto with --recompute (recomputation runs the layers in a loop)"),
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class FinetuneSettings(TrainingSettings):
    """A fine-tuning run; the recipe fields' defaults come from the task's recipe."""

    task: str = setting(help="Task name, e.g. rte, mnli, squad, squad_v2.")
    data_dir: str | None = setting(None, "The task's data folder (e.g. glue/RTE).",
                                   roles=("reads",))
    dropout: float = setting(0.0, "ALBERT dropout while fine-tuning.", rule=PROBABILITY,
                             roles=("recipe", "scratch"))
    classifier_dropout: float = setting(0.1, "Dropout before the task head.", rule=PROBABILITY,
                                        roles=("recipe",))
    length_aware_batching: bool = setting(
        True, "Batch examples of similar length (else random batches).")
    fixed_padding: bool = setting(
        False, "Pad every batch to --max_seq_length instead of to its longest example (what "
        "fixed-shape pipelines do; for comparison).")
    # --do_train=false evaluates or predicts from a stopped run's last checkpoint,
    # and the run still resumes training with --output_dir alone.
    do_train: bool = setting(True, "Train.", roles=("resumable", "invocation"))
    do_eval: bool = setting(True, "Evaluate on the task's dev split(s).",
                            roles=("resumable", "run_control"))
    do_predict: bool = setting(False, "Write test-set predictions.",
                               roles=("resumable", "run_control"))
    export: bool = setting(False, "Export a SavedModel at the end.",
                           roles=("resumable", "run_control"))
    eval_batch_size: int = setting(64, "Global eval batch size.", rule=POSITIVE,
                                   roles=("resumable",))
    task_options: dict = setting({}, "The task's own options (e.g. SQuAD's doc_stride).",
                                 flag=False)
    # The length of training in epochs, and evaluation while training.
    num_epochs: float | None = setting(
        None, "Train for this many passes over the training examples as the task counts them "
        "(SQuAD windows, multiple-choice questions): ceil(E x examples / batch_size) updates; "
        "instead of --train_steps.", rule=POSITIVE_REAL)
    warmup_proportion: float | None = setting(
        None, "Linear warmup as a share of the updates (int(P x updates)); instead of "
        "--warmup_steps.", rule=CLOSED_PROBABILITY)
    eval_every: int | str | None = setting(
        None, "Score the dev split(s) every N updates, or at the end of each epoch ('epoch'), "
        "and at the last update; each result is a line of eval_history.jsonl.",
        rule=EVAL_EVERY)
    keep_best: bool = setting(
        False, "Keep the weights of the best evaluated step (by --best_metric) as model/ "
        "(needs --eval_every).")
    best_metric: str | None = setting(
        None, "The metric --keep_best and early stopping compare (default: the task's primary "
        "metric; with several dev splits, SPLIT/METRIC or a metric of the first).")
    early_stopping_patience: int | None = setting(
        None, "Stop after this many evaluations without an improvement of at least "
        "--early_stopping_min_delta (needs --eval_every).", rule=POSITIVE)
    early_stopping_min_delta: float = setting(
        0.0, "The least change of --best_metric that counts as an improvement.",
        rule=NON_NEGATIVE)
    metrics_fn: str | None = setting(
        None, "Your own metrics: module:function, called with the model's outputs and the "
        "labels of each evaluated split (dicts of arrays, a row per example) and returning "
        "{name: number}, reported beside the task's (history, TensorBoard, results, "
        "--best_metric, a search's --metric); the module is imported from the working folder "
        "or the Python path.")
    max_train_samples: int | None = setting(
        None, "Train on the first N examples of the training file only (a quick experiment).",
        rule=POSITIVE)
    max_eval_samples: int | None = setting(
        None, "Evaluate on the first N examples of each dev split only.", rule=POSITIVE)

    def __post_init__(self):
        # A flag gives "200" as text: the number of updates it means.
        if isinstance(self.eval_every, str) and self.eval_every.strip().isdigit():
            object.__setattr__(self, "eval_every", int(self.eval_every))
        super().__post_init__()

    collapse_restarts: int = setting(
        0, "Restart a run whose predictions collapsed (all one class, one constant, no "
        "entity: its task tells) at the first evaluation past warmup or at the end, from its "
        "initial weights with another seed (seed + 1000 x restart; from the third restart on "
        "at half the learning rate), at most this many times; every attempt is in "
        "eval_results.json. A collapse is said in one line either way.", rule=NON_NEGATIVE)
    # Reporting (albert_tf/training/tracking.py): where the run's numbers go beside its files.
    report_to: tuple[str, ...] = setting(
        ("tensorboard",), "Where the run reports its settings, training scalars, evaluations "
        "and results: tensorboard (OUTPUT_DIR/tensorboard), mlflow (parameters, metrics by "
        "step, eval_results.json and model/ as artifacts; seeds, folds and search trials as "
        "child runs), both (tensorboard,mlflow), or none.", rule=REPORT_TO,
        roles=("resumable",))
    mlflow_tracking_uri: str | None = setting(
        None, "MLflow's tracking server or store (default: the MLFLOW_TRACKING_URI variable, "
        "else sqlite:///OUTPUT_DIR/mlflow.db with the artifacts in OUTPUT_DIR/mlartifacts).",
        roles=("resumable",))
    mlflow_experiment: str | None = setting(
        None, "The MLflow experiment (default: the task's name).", roles=("resumable",))
    mlflow_parent_run: str | None = setting(
        None, "The MLflow run this run is a child of (set by --seeds, --kfold and search).",
        flag=False, roles=("resumable",))

    # LoRA (albert_tf/lora.py): adapters trained on a frozen backbone.
    lora_rank: int = setting(
        0, "LoRA: train rank-R adapters on the attention query and value projections of every "
        "stored block and the task head, the backbone frozen; model/ then holds only those "
        "beside a reference to --init_checkpoint (0: full fine-tuning).", rule=NON_NEGATIVE)
    lora_alpha: float | None = setting(
        None, "LoRA scale numerator: the adapters' update is scaled by alpha/rank (default: "
        "the rank, a scale of 1).", rule=POSITIVE_REAL)

    def checks(self):
        return (*super().checks(),
                ("task", bool(self.task), "a task name"),
                (self.eval_every is not None or not self.keep_best,
                 "keep_best needs eval_every (the steps whose weights are compared)"),
                (self.eval_every is not None or self.early_stopping_patience is None,
                 "early_stopping_patience needs eval_every (it counts evaluations)"),
                (self.best_metric is None or self.keep_best
                 or self.early_stopping_patience is not None,
                 "best_metric is read by keep_best and early_stopping_patience; give one"),
                (not (self.recompute and self.dropout),
                 "recompute needs dropout=0 (a recomputed layer would draw new dropout masks), "
                 f"got dropout={self.dropout}"),
                (self.lora_alpha is None or self.lora_rank > 0,
                 f"lora_alpha={self.lora_alpha} needs lora_rank >= 1 (adapters to scale)"),
                (not self.lora_rank or bool(self.init_checkpoint),
                 f"lora_rank={self.lora_rank} needs an init_checkpoint (the backbone the "
                 "adapters adapt, kept frozen)"))


def resolve(task, overrides, config=None, config_source="--config"):
    """Settings for `task`: defaults, its recipe, `config`, then `overrides`.

    A `train_steps` or `num_epochs` given without `warmup_steps` or
    `warmup_proportion` keeps the recipe's warmup share (e.g. RTE's 200 of 800
    steps: 25 of 100); `keep_warmup_share`. Without an `init_checkpoint`
    (a model from random weights) the recipe is the task's `scratch_recipe`:
    the fine-tuning recipes are meant for pretrained weights.

    Args:
        task: the registered task (its `recipe` supplies the recipe fields, its
            `options` checks the task options), or its `tasks.declared` form.
        overrides: settings given explicitly (e.g. flags the user set).
        config: optional settings of a file (`--config`), named `config_source`
            in errors.
    """
    config = config or {}
    given = merged(config, overrides)
    recipe = task.recipe if given.get("init_checkpoint") else task.scratch_recipe
    values = {name: getattr(recipe, name) for name in FinetuneSettings.fields_with("recipe")}
    if config:
        # The file alone, as a run given only it would resolve (its run length keeps
        # the recipe's warmup share), so that its mistakes are named as its own.
        probe = {**values, **config}
        keep_warmup_share(probe, config, recipe.warmup_steps, recipe.train_steps)
        FinetuneSettings.from_dict({**probe, "task": task.name, "output_dir": "x"},
                                   config_source)
    values.update(given)
    keep_warmup_share(values, given, recipe.warmup_steps, recipe.train_steps)
    values["task"] = task.name
    settings = FinetuneSettings.from_dict(values)
    task.options(settings)  # a bad task option is named before any work
    return settings


def keep_warmup_share(values, given, warmup_steps, train_steps):
    """Completes `values` (the settings of a new run; `given`: those set explicitly)
    whose source (a task's recipe, a teacher's run) trains `train_steps` updates with
    `warmup_steps` of warmup: a run length given another way keeps the source's warmup
    share, and a quantity given one way drops the source's other way (`ALTERNATIVES`).

    Raises:
        ValueError: both ways of one quantity were given.
    """
    for one, other in ALTERNATIVES:
        if given.get(one) is not None and given.get(other) is not None:
            raise ValueError(f"give --{one} or --{other}, not both")
        if given.get(other) is not None:
            values[one] = None
    if given.get("warmup_steps") is not None or given.get("warmup_proportion") is not None:
        return
    if given.get("num_epochs") is not None:
        # The number of updates is known once the training split is featurized.
        values["warmup_proportion"] = warmup_steps / train_steps
    elif given.get("train_steps") is not None:
        values["warmup_steps"] = round(warmup_steps * values["train_steps"] / train_steps)


def scheduled(settings, train_examples):
    """`settings` with `train_steps` and `warmup_steps` made from `num_epochs` and
    `warmup_proportion` where given, for `train_examples` training examples (the
    training Features' length; read with `num_epochs` only): ceil(E x examples /
    batch_size) updates (epochs follow each other without a gap, so that many
    updates see E x examples), and int(P x updates) of warmup, as
    google-research/albert's run_classifier.py counts it."""
    steps, warmup = settings.train_steps, settings.warmup_steps
    if settings.num_epochs is not None:
        # round(): 0.1 x 30 is 3.0000000000000004, one update too many once ceil'd.
        steps = max(1, math.ceil(round(settings.num_epochs * train_examples, 6)
                                 / settings.batch_size))
    if settings.warmup_proportion is not None:
        warmup = int(settings.warmup_proportion * steps)
    return settings.replace(train_steps=steps, warmup_steps=warmup)


def settings_path(output_dir, file_name=SETTINGS_FILE):
    return os.path.join(output_dir, file_name)


def load_saved(cls, output_dir, file_name=SETTINGS_FILE):
    """The settings of class `cls` saved in `output_dir`, or None if it holds no run.

    `output_dir` is the folder as given now: a run folder that was moved or
    copied resumes where it is, whatever path it was saved with.
    """
    path = settings_path(output_dir, file_name)
    if not os.path.isfile(path):
        return None
    values = read_json(path)
    values["output_dir"] = output_dir
    return cls.from_dict(values, path)


def resumed(saved, given):
    """The settings of the `saved` run with the resumable ones of `given` (the
    settings given now) set over them; a conflict (`resume_conflicts`) raises
    ValueError naming each."""
    conflicts = resume_conflicts(saved, given)
    if conflicts:
        raise ValueError(
            f"--output_dir={saved.output_dir} holds a run with other settings ("
            + ", ".join(f"{k}: saved {a!r}, given {b!r}" for k, (a, b) in conflicts.items())
            + "); pass only --output_dir to resume it, or use a new --output_dir")
    resumable = saved.fields_with("resumable")
    return saved.replace(**{k: v for k, v in given.items() if k in resumable})


def resume_conflicts(saved, given):
    """Fields where `given` (explicit settings) contradicts the saved run.

    Paths are compared by what they point to; "auto" for a setting saved
    resolved (role "auto": precision, XLA, layer execution) agrees with the saved choice;
    settings of role "resumable" may change.
    """
    conflicts = {}
    resumable, auto = saved.fields_with("resumable"), saved.fields_with("auto")
    for name, value in given.items():
        if name in resumable or name == "output_dir":
            continue
        old = getattr(saved, name)
        try:  # as the settings hold it (a flag's "200" is eval_every 200)
            value = getattr(saved.replace(**{name: value}), name)
        except (ValueError, TypeError):
            pass
        if name in auto and value == "auto":
            continue
        if name == "task_options":  # only the options given now are compared
            conflicts.update({f"task_options.{k}": (old.get(k), v) for k, v in value.items()
                              if old.get(k) != v})
            continue
        if name in PATH_FIELDS and isinstance(value, str) and isinstance(old, str):
            if _same_path(old, value):
                continue
        if old != value:
            conflicts[name] = (old, value)
    return conflicts


PATH_FIELDS = ("init_checkpoint", "vocab_file", "data_dir", "model", "input_files",
               "eval_files")


def _same_path(a, b):
    if os.path.exists(a) and os.path.exists(b):
        return os.path.samefile(a, b)
    return os.path.normpath(os.path.abspath(a)) == os.path.normpath(os.path.abspath(b))
