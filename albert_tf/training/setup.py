"""The setup every training run shares: seed, strategy, precision, optimizer, compile.

Fine-tuning (`albert_tf.training.finetuning`) and pretraining
(`albert_tf.pretraining.trainer`) both start with `start_run(settings)` and
compile their model with `RunSetup.compile`; the checkpoints, the training
loop and the divergence guard are `albert_tf.training.engine.train`'s.
"""

import dataclasses
import os

import keras

from albert_tf.io_utils import hold_folder
from albert_tf.training.devices import is_chief, make_strategy, precision_name, worker_index
from albert_tf.training.execution import resolve_execution
from albert_tf.training.optimizers import create_optimizer
from albert_tf.training.run_folder import has_progress
from albert_tf.training.settings import load_saved


@dataclasses.dataclass(frozen=True)
class RunSetup:
    """What `start_run` decided.

    settings: the run's settings with `precision`, `xla` and `layer_execution`
        resolved (never "auto").
    strategy: the `tf.distribute.Strategy`.
    worker: None on the chief (or a single-machine run), else this worker's index.
    execution: the `albert_tf.training.execution.Execution` (with what was measured).
    """

    settings: object
    strategy: object
    worker: int | None
    execution: object

    @property
    def policy(self):
        """The Keras dtype policy name ("float32", "mixed_bfloat16", ...)."""
        return self.execution.policy

    @property
    def jit(self):
        """Whether the training step is compiled with XLA."""
        return self.execution.jit

    @property
    def unroll(self):
        """Whether the encoder's layers run unrolled (else in a loop)."""
        return self.execution.unroll

    @property
    def inference_jit(self):
        """Whether evaluation and prediction are compiled with XLA: measured
        apart from the training step under `--xla=auto`, else as it is."""
        return self.execution.inference_jit

    @property
    def chief(self):
        return self.worker is None

    @property
    def replicas(self):
        return self.strategy.num_replicas_in_sync

    def compile(self, model):
        """Compiles `model` with the run's optimizer (built under the strategy's scope)."""
        s = self.settings
        with self.strategy.scope():
            optimizer = create_optimizer(s.optimizer, s.learning_rate, s.train_steps,
                                         s.warmup_steps, s.weight_decay, s.clip_norm,
                                         s.accumulation_steps)
            if self.policy == "mixed_float16":
                # float16 gradients underflow without dynamic loss scaling.
                optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
            model.compile(optimizer=optimizer, jit_compile=self.jit)
        return model

    def describe(self):
        """One line: devices, strategy, replicas, precision, XLA and layer execution
        (with the measurements behind an `auto` choice)."""
        import tensorflow as tf

        gpus = tf.config.list_logical_devices("GPU")
        devices = f"{len(gpus)} GPU(s)" if gpus else "CPU"
        return (f"{devices}, {type(self.strategy).__name__} with {self.replicas} replica(s), "
                f"{self.execution.describe()}"
                + (", deterministic" if self.settings.deterministic else ""))


def start_run(settings, settings_file, config=None, varied=None):
    """Seeds, builds the strategy and resolves precision, XLA and layer execution.

    A setting left at "auto" takes the choice saved in
    `<output_dir>/<settings_file>` by an earlier start of the same run (one
    that saved a checkpoint), so
    that a resumed run never switches between float32 and bfloat16 half-way
    (on a CPU `auto` measures, and a busy machine could measure otherwise).
    The chief saves the resolved settings there, once it holds the folder: a
    second run on a busy `output_dir` is refused naming the first
    (`io_utils.hold_folder`).

    config: the model's `AlbertConfig`, which XLA and layer execution are
    measured on (`albert_tf.training.execution`); without it they take the
    device's defaults.

    varied: settings of this start only (a restart's seed and learning rate,
    `collapse.Attempts.varied`): the run takes them, `settings_file` keeps the
    run's own, which a resumed run is compared with.

    `settings.deterministic`: TensorFlow's op determinism is enabled (for the
    rest of the process: TensorFlow cannot turn it off), and nothing is timed to
    resolve `auto`. With the seed set below that makes every random draw of the
    run (initialisation, dropout; the data order is `--seed`'s own plan) the same.
    """
    if is_chief(settings.strategy):
        hold_folder(settings.output_dir, "--output_dir")
    saved = (load_saved(type(settings), settings.output_dir, settings_file)
             if has_progress(settings.output_dir) else None)
    if saved is not None:
        settings = settings.replace(**{name: getattr(saved, name)
                                       for name in settings.fields_with("auto")
                                       if getattr(settings, name) == "auto"})
    if settings.deterministic:
        import tensorflow as tf

        tf.config.experimental.enable_op_determinism()
    strategy = make_strategy(settings.strategy, settings.tpu)
    micro_batch = settings.batch_size // settings.accumulation_steps
    execution = resolve_execution(
        settings.precision, settings.xla, settings.layer_execution, strategy, config=config,
        recompute=settings.recompute,
        batch_size=max(1, micro_batch // strategy.num_replicas_in_sync),
        seq_length=settings.max_seq_length, timed=not settings.deterministic,
        train_steps=settings.train_steps * settings.accumulation_steps)
    own = {name: getattr(settings, name) for name in (varied or {})}
    settings = settings.replace(**(varied or {}))
    # After measuring: the probe's models drew from the random state.
    keras.utils.set_random_seed(settings.seed)
    settings = settings.replace(precision=precision_name(execution.policy),
                                xla="on" if execution.jit else "off",
                                layer_execution=execution.layer_execution)
    setup = RunSetup(settings, strategy, worker_index(strategy), execution)
    if setup.chief:
        os.makedirs(settings.output_dir, exist_ok=True)
        kept = {} if saved is None else {name: getattr(saved, name)
                                          for name in saved.fields_with("invocation")}
        settings.replace(**own, **kept).save(os.path.join(settings.output_dir, settings_file))
    return setup
