"""Callbacks of a training run: progress, summaries, checkpoints, divergence."""

import contextlib
import errno
import logging
import math
import os
import shutil
import signal
import sys
import time

import keras
import tensorflow as tf

from albert_tf.startup import native_noise_filtered
from albert_tf.errors import RunStopped, StopAsked
from albert_tf.progress import Heartbeat, notebook_bar

log = logging.getLogger(__name__)


class TrainingDiverged(RunStopped):
    """The loss became NaN/inf or exploded; the last good checkpoint is kept."""


class TrainingInterrupted(StopAsked):
    """Ctrl-C or SIGTERM stopped training; a checkpoint of the current step was saved."""


class CheckpointWriteFailed(RunStopped):
    """The disk filled up while a checkpoint was written; the last good one is kept."""


def remove_partial_checkpoints(directory):
    """Removes the `*_temp` folders a checkpoint write leaves when it is cut short
    (a killed process, a full disk); a complete checkpoint never is one."""
    if not os.path.isdir(directory):
        return
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if name.endswith("_temp") and os.path.isdir(path):
            log.info("removing %s, an incomplete checkpoint write", path)
            shutil.rmtree(path, ignore_errors=True)


def _checkpoint_bytes(manager):
    """About what one checkpoint takes: the newest one's files, else the variables."""
    latest = manager.latest_checkpoint
    if latest:
        folder, prefix = os.path.split(latest)
        sizes = [os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder)
                 if n.startswith(prefix + ".")]
        if sizes:
            return sum(sizes)
    return sum(v.numpy().nbytes for v in manager.checkpoint.model.variables
               + manager.checkpoint.optimizer.variables)


def save_checkpoint(manager, step):
    """`manager.save(checkpoint_number=step)`; a full disk (or quota) is a
    `CheckpointWriteFailed` naming the folder, the space needed and the last good
    checkpoint, which is kept (the partial write is removed)."""
    try:
        manager.save(checkpoint_number=step)
    except (tf.errors.ResourceExhaustedError, OSError) as e:
        full = isinstance(e, tf.errors.ResourceExhaustedError) or e.errno in (
            errno.ENOSPC, errno.EDQUOT)
        if not full:
            raise
        directory = manager.directory
        remove_partial_checkpoints(directory)
        needed = _checkpoint_bytes(manager) / 2**20
        free = shutil.disk_usage(directory).free / 2**20
        raise CheckpointWriteFailed(
            f"{directory}: no space left for the checkpoint of step {step} (it needs about "
            f"{needed:.1f} MiB free, {free:.1f} MiB are); the last good checkpoint is "
            f"{manager.latest_checkpoint or 'none yet'}. Free some space and run the same "
            "command again to resume from it") from None


def update_step(model):
    """Optimizer updates done so far (micro-batches / accumulation steps); 0 for
    a model never compiled (a distillation teacher, a model loaded to predict)."""
    optimizer = getattr(model, "optimizer", None)
    return int(optimizer.iterations.numpy()) if optimizer is not None else 0


class PerStepLoss(keras.callbacks.Callback):
    """Makes `logs["loss"]` the loss of the latest step, not the run's mean.

    Keras averages the loss since the start of the epoch, and a run here is
    one long epoch; resetting the tracker after each step lets the other
    callbacks see (and the guard react to) the current loss.
    """

    def on_train_batch_end(self, batch, logs=None):
        self.model.reset_metrics()


class DivergenceGuard(keras.callbacks.Callback):
    """Stops training when the loss is not finite or exceeds `factor` x the first.

    The check runs before the checkpoint callback (callbacks run in order), so
    a diverged state is never saved.
    """

    def __init__(self, factor=100.0):
        super().__init__()
        self.factor = factor
        self.first_loss = None
        self.diverged = None

    def on_train_batch_end(self, batch, logs=None):
        loss = float((logs or {}).get("loss", 0.0))
        if self.first_loss is None and math.isfinite(loss):
            self.first_loss = max(loss, 1e-3)
        exploded = self.first_loss is not None and loss > self.factor * self.first_loss
        if not math.isfinite(loss) or exploded:
            self.diverged = (update_step(self.model), loss)
            self.model.stop_training = True


class StopOnSignal(keras.callbacks.Callback):
    """Ctrl-C or SIGTERM while training: the step under way ends, then training stops.

    Used as a context manager around `fit` (in the main thread; elsewhere it
    leaves signals alone, and a signal ignored when it begins, as `nohup`
    and a shell's background jobs ignore Ctrl-C, stays ignored). The first
    signal is only noted: an exception raised at an arbitrary point inside
    Keras and TensorFlow can leave their state half-changed (interrupted
    this way, Keras programs have crashed), so training stops at the next
    step's end, where the weights and the optimizer agree and the checkpoint
    callback saves them. A second signal stops at once
    (`KeyboardInterrupt`), for a step or an evaluation that takes too long.
    `at_once`: the first signal stops at once too (a worker of several, whose
    steps and saving need the others, cannot finish a step alone).
    `signal`: the first signal's number, or None.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, at_once=False):
        super().__init__()
        self.at_once = at_once
        self.signal = None
        self._previous = {}

    def __enter__(self):
        try:
            self._previous = {s: signal.signal(s, self._received) for s in self.SIGNALS
                              if signal.getsignal(s) is not signal.SIG_IGN}
        except ValueError:  # not the main thread
            self._previous = {}
        return self

    def __exit__(self, *exc):
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous = {}
        return False

    def _received(self, signum, frame):
        if self.signal is not None or self.at_once:
            raise KeyboardInterrupt
        self.signal = signum
        name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        print(f"{name}: stopping when the current step ends "
              "(again to stop at once)", file=sys.stderr, flush=True)

    def on_train_batch_end(self, batch, logs=None):
        if self.signal is not None:
            self.model.stop_training = True


class CheckpointSaver(keras.callbacks.Callback):
    """Saves a training checkpoint every `every` optimizer updates and at the end."""

    def __init__(self, manager, every, guard):
        super().__init__()
        self.manager = manager
        self.every = every
        self.guard = guard
        self.last_saved = None

    def save(self):
        """Saves the current step (once), unless training diverged."""
        step = update_step(self.model)
        if self.guard.diverged is None and step != self.last_saved:
            save_checkpoint(self.manager, step)
            self.last_saved = step

    def on_train_batch_end(self, batch, logs=None):
        if update_step(self.model) % self.every == 0:
            self.save()

    def on_train_end(self, logs=None):
        self.save()


class ProgressLogger(keras.callbacks.Callback):
    """Progress with loss, throughput and ETA; TensorBoard scalars every `every` steps
    (and to `report`, a function `(step, {name: value})`, when given).

    A progress bar on a terminal; in logs (no terminal), one line every
    `every` steps or every `interval` seconds, whichever comes first, and one
    at the last step (a run of few, slow updates still shows). Throughput
    leaves out the first step, which includes tracing (and XLA compilation).
    `clock`: seconds, monotonic (a test's scripted clock).
    """

    def __init__(self, total_steps, examples_per_step, summary_dir, every=50, verbose=True,
                 interval=30.0, clock=time.perf_counter, report=None):
        super().__init__()
        self.total_steps = total_steps
        self.examples_per_step = examples_per_step
        self.every = every
        self.verbose = verbose
        self.interval, self.clock = interval, clock
        self._last_line = None  # when the last line was printed (or training began)
        self.writer = tf.summary.create_file_writer(summary_dir) if summary_dir else None
        self.report = report
        self.bar = self.notebook_bar = None
        self.first = None  # (step, time) after the first step
        self.final_throughput = 0.0
        self.last_eval = {}  # the latest evaluation while training, shown on the line
        self._first_step = None  # a `Heartbeat` until the first step ends
        self._first_run = None  # the native-note filter until then
        self._began = None

    def on_train_begin(self, logs=None):
        self._last_line = self._began = self.clock()
        if self.verbose:  # in a notebook (albert_tf.api): its bar
            self.notebook_bar = notebook_bar(self.total_steps, "train", "steps",
                                             update_step(self.model))
        if self.verbose and self.notebook_bar is None and sys.stdout.isatty():
            self.bar = keras.utils.Progbar(self.total_steps, stateful_metrics=[
                "loss", "ex/s", "mlm_accuracy", "sop_accuracy", "nsp_accuracy"])
            self.bar.update(update_step(self.model))
        # The first step builds and traces the training graph (a minute on a busy CPU):
        # a line every `interval` seconds until it is done.
        self._first_step = Heartbeat(
            f"step {update_step(self.model)}/{self.total_steps}",
            "building and tracing the training step", stream=sys.stdout,
            interval=self.interval, enabled=self.verbose and self.bar is None).start()
        # Its kernels' first run prints native notes (oneDNN's "supports DT_INT64 only on
        # platforms with AVX-512"): filtered as at start-up, anything else passed on.
        self._first_run = contextlib.ExitStack()
        self._first_run.enter_context(native_noise_filtered())

    def throughput(self):
        if self.first is None:
            return 0.0
        step, start = self.first
        elapsed = self.clock() - start
        return (update_step(self.model) - step) * self.examples_per_step / max(elapsed, 1e-9)

    def on_train_batch_end(self, batch, logs=None):
        step = update_step(self.model)
        now = self.clock()
        if self.first is None:
            self.first = (step, now)
            self.stop_heartbeat()
        if self._last_line is None:
            self._last_line = now
        values = {k: float(keras.ops.convert_to_numpy(v).ravel()[0])
                  for k, v in (logs or {}).items()}
        if self.notebook_bar is not None:
            self.notebook_bar.update(step - self.notebook_bar.n)
            self.notebook_bar.set_postfix({**values, **self.last_eval,
                                           "ex/s": self.throughput()}, refresh=False)
        elif self.bar is not None:
            self.bar.stateful_metrics.update(self.last_eval)  # shown as is, not averaged
            self.bar.update(step, [*values.items(), *self.last_eval.items(),
                                   ("ex/s", self.throughput())])
        elif self.verbose and (step % self.every == 0 or step >= self.total_steps
                               or now - self._last_line >= self.interval):
            self._last_line = now
            print(self.line(step, {**values, **self.last_eval}), flush=True)
        if (self.writer is not None or self.report is not None) and step % self.every == 0:
            lr = float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate))
            scalars = {**{f"train/{name}": value for name, value in values.items()},
                       "train/learning_rate": lr,
                       "train/examples_per_second": self.throughput()}
            if self.writer is not None:
                with self.writer.as_default(step=step):
                    for name, value in scalars.items():
                        tf.summary.scalar(name, value)
            if self.report is not None:
                self.report(step, scalars)

    def line(self, step, values):
        """`step N/T  loss L  R examples/s  ETA m:ss`: one line of the log."""
        shown = "  ".join(f"{k} {v:.4f}" for k, v in values.items())
        rate = self.throughput()
        if not rate:  # the first step: no rate yet (its time is mostly tracing)
            took = int(self.first[1] - self._began) if self.first else 0
            return (f"step {step}/{self.total_steps}  {shown}  (the first step, with its "
                    f"tracing: {took // 60}:{took % 60:02d})")
        eta = (self.total_steps - step) * self.examples_per_step / rate
        return (f"step {step}/{self.total_steps}  {shown}  {rate:.1f} examples/s  "
                f"ETA {int(eta) // 60}:{int(eta) % 60:02d}")

    def stop_heartbeat(self):
        """Ends the first step's heartbeat and native-note filter (also when training
        stopped before it)."""
        if self._first_step is not None:
            self._first_step.stop()
        if self._first_run is not None:
            self._first_run.close()
            self._first_run = None

    def on_train_end(self, logs=None):
        self.stop_heartbeat()
        self.final_throughput = self.throughput()
        if self.notebook_bar is not None:
            self.notebook_bar.close()
        if self.writer is not None:
            self.writer.flush()


class LossRiseWarning(keras.callbacks.Callback):
    """Warns (once per rise) when the training loss rises for a sustained stretch.

    The loss is averaged over windows of `window` steps; when `stretch`
    windows in a row average more than `factor` x the lowest window so far,
    at least `min_rise` above it (near zero, batches of a well-fitted set
    differ by more than a factor) and more than `noise` standard errors of
    the difference of two window means (small batches' losses scatter: a
    healthy run's windows differ by chance, and the lowest of many is low by
    chance), the run is probably not learning (a learning rate too high for
    the weights, e.g. a fine-tuning recipe on random weights or the reverse):
    said while training, not found afterwards, through the project's logger.
    A new lowest window re-arms it.
    """

    def __init__(self, window=20, stretch=3, factor=1.2, min_rise=0.1, noise=4.0, warn=None):
        super().__init__()
        self.window, self.stretch, self.factor = window, stretch, factor
        self.min_rise, self.noise = min_rise, noise
        self.warn = warn or (lambda message: log.warning("%s", message))
        self._losses, self._best, self._above, self._warned = [], None, 0, False
        self._step = 0

    def _window(self):
        """`(mean, variance of the mean)` of the window's losses."""
        n = len(self._losses)
        mean = sum(self._losses) / n
        variance = sum((x - mean) ** 2 for x in self._losses) / max(n - 1, 1)
        return mean, variance / n

    def observe(self, loss):
        """Takes one step's loss; returns the warning when one is due, else None."""
        self._step += 1
        self._losses.append(loss)
        if len(self._losses) < self.window:
            return None
        (mean, spread), self._losses = self._window(), []
        if self._best is None or mean < self._best[0]:
            self._best, self._above, self._warned = (mean, self._step, spread), 0, False
            return None
        rise = mean - self._best[0]
        rose = mean > self._best[0] * self.factor and rise >= self.min_rise and \
            rise > self.noise * math.sqrt(spread + self._best[2])
        self._above = self._above + 1 if rose else 0
        if self._above < self.stretch or self._warned:
            return None
        self._warned = True
        return (f"the training loss has risen for {self._above * self.window} steps: "
                f"{self._best[0]:.4g} (mean of the {self.window} steps to {self._best[1]}) "
                f"-> {mean:.4g} (to step {self._step}); a lower --learning_rate or longer "
                "--warmup_steps usually helps")

    def on_train_batch_end(self, batch, logs=None):
        if logs and "loss" in logs:
            loss = float(keras.ops.convert_to_numpy(logs["loss"]).ravel()[0])
            if math.isfinite(loss):
                message = self.observe(loss)
                if message:
                    self.warn(message)


def write_scalars(summary_dir, step, values, prefix):
    """Writes `values` (name -> number) as TensorBoard scalars under `prefix/`."""
    writer = tf.summary.create_file_writer(summary_dir)
    with writer.as_default(step=step):
        for name, value in values.items():
            if isinstance(value, (int, float)):
                tf.summary.scalar(f"{prefix}/{name}", value)
    writer.flush()
