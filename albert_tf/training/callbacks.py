"""Callbacks of a training run: progress, summaries, checkpoints, divergence."""

import errno
import logging
import math
import os
import shutil
import sys
import time

import keras
import tensorflow as tf

from albert_tf.errors import RunStopped


class TrainingDiverged(RunStopped):
    """The loss became NaN/inf or exploded; the last good checkpoint is kept."""


class TrainingInterrupted(RunStopped):
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
            logging.info("removing %s, an incomplete checkpoint write", path)
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
    """Optimizer updates done so far (micro-batches / accumulation steps)."""
    return int(model.optimizer.iterations.numpy())


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


class CheckpointSaver(keras.callbacks.Callback):
    """Saves a training checkpoint every `every` optimizer updates and at the end."""

    def __init__(self, manager, every, guard):
        super().__init__()
        self.manager = manager
        self.every = every
        self.guard = guard
        self.last_saved = None

    def _save(self):
        step = update_step(self.model)
        if self.guard.diverged is None and step != self.last_saved:
            save_checkpoint(self.manager, step)
            self.last_saved = step

    def on_train_batch_end(self, batch, logs=None):
        if update_step(self.model) % self.every == 0:
            self._save()

    def on_train_end(self, logs=None):
        self._save()


class ProgressLogger(keras.callbacks.Callback):
    """Progress with loss and throughput; TensorBoard scalars every `every` steps.

    A progress bar on a terminal; in logs (no terminal), one line every
    `every` steps. Throughput leaves out the first step, which includes
    tracing (and XLA compilation).
    """

    def __init__(self, total_steps, examples_per_step, summary_dir, every=50, verbose=True):
        super().__init__()
        self.total_steps = total_steps
        self.examples_per_step = examples_per_step
        self.every = every
        self.verbose = verbose
        self.writer = tf.summary.create_file_writer(summary_dir) if summary_dir else None
        self.bar = None
        self.first = None  # (step, time) after the first step
        self.final_throughput = 0.0

    def on_train_begin(self, logs=None):
        if self.verbose and sys.stdout.isatty():
            self.bar = keras.utils.Progbar(self.total_steps, stateful_metrics=[
                "loss", "ex/s", "mlm_accuracy", "sop_accuracy"])
            self.bar.update(update_step(self.model))

    def throughput(self):
        if self.first is None:
            return 0.0
        step, start = self.first
        elapsed = time.perf_counter() - start
        return (update_step(self.model) - step) * self.examples_per_step / max(elapsed, 1e-9)

    def on_train_batch_end(self, batch, logs=None):
        step = update_step(self.model)
        if self.first is None:
            self.first = (step, time.perf_counter())
        values = {k: float(keras.ops.convert_to_numpy(v).ravel()[0])
                  for k, v in (logs or {}).items()}
        if self.bar is not None:
            self.bar.update(step, [*values.items(), ("ex/s", self.throughput())])
        elif self.verbose and step % self.every == 0:
            shown = "  ".join(f"{k} {v:.4f}" for k, v in values.items())
            rate = self.throughput()
            eta = ((self.total_steps - step) * self.examples_per_step / rate) if rate else 0
            print(f"step {step}/{self.total_steps}  {shown}  {rate:.1f} examples/s  "
                  f"ETA {int(eta) // 60}:{int(eta) % 60:02d}", flush=True)
        if self.writer is not None and step % self.every == 0:
            lr = self.model.optimizer.learning_rate
            with self.writer.as_default(step=step):
                for name, value in values.items():
                    tf.summary.scalar(f"train/{name}", value)
                tf.summary.scalar("train/learning_rate", float(keras.ops.convert_to_numpy(lr)))
                tf.summary.scalar("train/examples_per_second", self.throughput())

    def on_train_end(self, logs=None):
        self.final_throughput = self.throughput()
        if self.writer is not None:
            self.writer.flush()


def write_scalars(summary_dir, step, values, prefix):
    """Writes `values` (name -> number) as TensorBoard scalars under `prefix/`."""
    writer = tf.summary.create_file_writer(summary_dir)
    with writer.as_default(step=step):
        for name, value in values.items():
            if isinstance(value, (int, float)):
                tf.summary.scalar(f"{prefix}/{name}", value)
    writer.flush()
