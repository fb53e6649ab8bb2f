"""Training and distributed prediction for any task model.

`train` runs Keras `fit` over a planned, resumable batch stream; `predict`
runs the model on every example exactly once under any strategy and returns
the outputs in example order.
"""

import functools
import logging
import os
import re
import weakref

import keras
import numpy as np
import tensorflow as tf

from albert_tf.checkpoints.weights import CheckpointError
from albert_tf.data import distributed_dataset, eval_batches, train_batches
from albert_tf.training.callbacks import (CheckpointSaver, DivergenceGuard, LossRiseWarning,
                                          PerStepLoss, ProgressLogger, StopOnSignal,
                                          TrainingDiverged, TrainingInterrupted,
                                          remove_partial_checkpoints, save_checkpoint,
                                          update_step)
from albert_tf.training.run_folder import CHECKPOINT_DIR, TENSORBOARD_DIR

log = logging.getLogger(__name__)


def checkpoint_manager(model, strategy, directory, max_to_keep=3, only_trained=False):
    """A `tf.train.CheckpointManager` of the model and its optimizer.

    The optimizer's variables are built first so that a restore assigns them
    immediately (Keras 3 variables are not restored lazily). Some state is
    not tracked for `tf.train.Checkpoint` by Keras objects: the random
    generators' states (dropout) and a loss-scale optimizer's scale and
    counter. All of it is added explicitly, so that a resumed run continues
    exactly as an uninterrupted one.

    only_trained: save the trainable weights and the optimizer, not the
    frozen weights (a LoRA run's backbone, restored from its checkpoint).
    """
    if not model.optimizer.built:  # building twice would create new variables
        with strategy.scope():
            model.optimizer.build(model.trainable_variables)
    state = tf.Module()
    state.optimizer = {v.path: v for v in model.optimizer.variables}
    if only_trained:
        # Weights the run never changes (a LoRA run's backbone) are not saved:
        # they come back from the checkpoint the run starts from.
        frozen = {id(v) for v in model.weights if not v.trainable}
        state.rng = [v for v in model.non_trainable_variables if id(v) not in frozen]
        state.trained = {v.path: v for v in model.trainable_variables}
        checkpoint = tf.train.Checkpoint(optimizer=model.optimizer, state=state)
    else:
        state.rng = list(model.non_trainable_variables)
        checkpoint = tf.train.Checkpoint(model=model, optimizer=model.optimizer, state=state)
    try:
        return tf.train.CheckpointManager(checkpoint, directory, max_to_keep=max_to_keep)
    except Exception:  # noqa: BLE001 - the manager reads the state file, which may be anything
        state = os.path.join(directory, "checkpoint")
        os.replace(state, state + ".unreadable")
        logging.warning("%s cannot be read; moved to %s.unreadable (the ckpt-N files beside it "
                        "are used)", state, state)
        return tf.train.CheckpointManager(checkpoint, directory, max_to_keep=max_to_keep)


def micro_batches_done(optimizer):
    """Micro-batches consumed so far: Keras counts them in the (innermost)
    optimizer's `_iterations`, which differs from `iterations` (updates)
    under gradient accumulation; a loss-scale optimizer wraps the real one."""
    optimizer = getattr(optimizer, "inner_optimizer", optimizer)
    return int(optimizer._iterations.numpy())


def checkpoint_paths(directory):
    """`(paths, state_ok)`: the checkpoints of `directory`, oldest first (those its
    `checkpoint` state file lists and every `ckpt-N` on disk, by N, so that a state
    file that is unreadable, garbage or stale never hides the checkpoints beside
    it), and whether the state file could be read."""
    try:
        state = tf.train.get_checkpoint_state(directory)
    except Exception:  # noqa: BLE001 - any unreadable state file: the files on disk decide
        state = None
    listed = list(state.all_model_checkpoint_paths) or [state.model_checkpoint_path] \
        if state is not None else []
    paths = {}
    for path in listed:
        if not os.path.isfile(path + ".index"):  # a folder moved since (absolute paths)
            path = os.path.join(directory, os.path.basename(path))
        paths[os.path.basename(path)] = path
    for name in os.listdir(directory) if os.path.isdir(directory) else ():
        match = re.fullmatch(r"(ckpt-(\d+))\.index", name)
        if match:
            paths.setdefault(match.group(1), os.path.join(directory, match.group(1)))
    state_ok = state is not None or not paths
    if not state_ok:
        logging.warning("%s: the checkpoint state file is missing or cannot be read; using "
                        "the ckpt-N files beside it", os.path.join(directory, "checkpoint"))

    def step(name):
        number = re.search(r"-(\d+)$", name)
        return int(number.group(1)) if number else -1
    return [paths[name] for name in sorted(paths, key=step)], state_ok


def restore_latest(manager, directory):
    """Restores the newest intact checkpoint in `directory`, if any; returns its update step.

    A truncated or corrupt checkpoint (a disk that filled up, a copy cut short)
    is named in one warning and the one before it is used; so is an unreadable
    `checkpoint` state file (the `ckpt-N` files on disk are used): a run never
    starts again from step 0 over checkpoints it has.

    Raises:
        CheckpointError: checkpoints exist but none can be read.
    """
    paths, state_ok = checkpoint_paths(directory)
    if not paths:
        return 0
    damaged = []
    for path in reversed(paths):
        try:
            manager.checkpoint.restore(path).assert_existing_objects_matched()
        except Exception as e:  # a damaged file fails in many ways (OpError, IndexError, ...)
            reason = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
            log.warning("%s: damaged or incomplete checkpoint (%s); trying the one before",
                            path, reason)
            damaged.append(path)
            continue
        if damaged or not state_ok:
            logging.warning("resuming from %s", path)
        return int(manager.checkpoint.optimizer.iterations.numpy())
    raise CheckpointError(f"{directory}: no intact checkpoint ({', '.join(damaged)} cannot be "
                          "read); move the folder away to start the run afresh")


def planned_dataset(strategy, features, settings, batch_length):
    """`make_dataset` for `train`: batches planned from `settings.seed`.

    The plan covers every micro-batch of the run, so a resumed run that
    starts at micro-batch `m` sees exactly what the uninterrupted run saw.
    """
    micro_total = settings.train_steps * settings.accumulation_steps
    micro_batch = settings.batch_size // settings.accumulation_steps
    plan = train_batches(features.lengths, micro_batch, micro_total, settings.seed,
                         length_aware=settings.length_aware_batching)
    return lambda start: distributed_dataset(strategy, features, plan, batch_length, start)


def train(model, strategy, make_dataset, settings, output_dir, verbose=True, worker=None,
          evaluator=None, only_trained=False, tensorboard=True, report=None):
    """Trains `model` (compiled, with its optimizer) for `settings.train_steps`.

    Resumes from the newest checkpoint in `output_dir/checkpoints`.

    make_dataset: function from the number of micro-batches already done to
        a distributed dataset of (inputs, labels) that continues from there.
    settings: reads `train_steps`, `batch_size` (global), `accumulation_steps`,
        `checkpoint_every`, `keep_checkpoints`, `log_every`, `divergence_factor`.

    worker: None on the chief (or alone); else this worker's index. Every
    worker of a multi-worker run saves (saving takes part in the collective
    ops), but only the chief into `output_dir`; the others save into their
    own scratch folder and all restore from the chief's.

    evaluator: an `albert_tf.training.eval_history.Evaluator` (evaluation while
    training, early stopping), or None. A run it stopped early is over: resumed,
    it trains no further. The result then holds `early_stopped` (its reason).

    only_trained: checkpoints hold the trainable variables only (LoRA: the
    frozen backbone is the pretrained checkpoint's).

    tensorboard: whether the chief writes the training scalars to
    `output_dir/tensorboard`; report: a function `(step, {name: value})` that
    gets them too (a tracker's), or None.

    Raises:
        TrainingDiverged: the loss became NaN/inf or exploded.
    """
    accumulation = settings.accumulation_steps
    chief_dir = os.path.join(output_dir, CHECKPOINT_DIR)
    save_dir = chief_dir if worker is None else os.path.join(output_dir, f".worker-{worker}")
    remove_partial_checkpoints(save_dir)  # left by a killed write
    manager = checkpoint_manager(model, strategy, save_dir, settings.keep_checkpoints,
                                 only_trained=only_trained)
    start = restore_latest(manager, chief_dir)
    if start and verbose and worker is None:
        print(f"resumed from step {start} of {settings.train_steps}", flush=True)
    micro_total = settings.train_steps * accumulation
    micro_start = micro_batches_done(model.optimizer) if start else 0
    guard = DivergenceGuard(settings.divergence_factor)
    progress = ProgressLogger(settings.train_steps, settings.batch_size,
                              os.path.join(output_dir, TENSORBOARD_DIR)
                              if worker is None and tensorboard else None,
                              every=settings.log_every, verbose=verbose and worker is None,
                              report=report if worker is None else None)
    saver = CheckpointSaver(manager, settings.checkpoint_every, guard)
    rise = LossRiseWarning(window=max(5, min(50, settings.train_steps // 20)))
    stop = StopOnSignal(at_once=isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy))
    callbacks = [PerStepLoss(), guard, saver, rise, progress, stop]
    stopped = None
    if evaluator is not None:
        evaluator.attach(saver, guard, progress)
        callbacks.insert(3, evaluator)  # after the checkpoint, before the progress line
        try:
            stopped = evaluator.resume(start)
        except KeyboardInterrupt:
            raise TrainingInterrupted(f"interrupted while evaluating step {start}; run the "
                                      "same command again to resume") from None
    if micro_start >= micro_total or stopped is not None:
        return {"step": start, "resumed_from": start,
                **({"early_stopped": stopped} if stopped else {})}
    dataset = make_dataset(micro_start)
    try:
        with stop:
            model.fit(dataset, epochs=1, steps_per_epoch=micro_total - micro_start,
                      callbacks=callbacks, verbose=0, shuffle=False)
    except KeyboardInterrupt:
        progress.stop_heartbeat()
        raise _interrupted(model, strategy, saver, settings.train_steps) from None
    finally:
        progress.stop_heartbeat()
    if guard.diverged is not None:
        step, loss = guard.diverged
        raise TrainingDiverged(
            f"training diverged at step {step} (loss {loss:.4g}); the last good checkpoint is "
            f"{manager.latest_checkpoint or 'none (nothing was saved yet)'}. Lower "
            "--learning_rate, raise --warmup_steps or use --precision=fp32")
    if stop.signal is not None:  # the step's checkpoint was saved as training ended
        raise _interrupted(model, strategy, saver, settings.train_steps)
    result = {"step": update_step(model), "resumed_from": start,
              "train_examples_per_second": progress.final_throughput}
    if evaluator is not None and evaluator.stopped is not None:
        result["early_stopped"] = evaluator.stopped
    return result


def _interrupted(model, strategy, saver, total_steps):
    """`TrainingInterrupted` after saving the current step (training stopped
    between steps, or a KeyboardInterrupt landed there: a step runs as one
    call, so the weights and the optimizer state agree)."""
    step = update_step(model)
    if step == 0:
        return TrainingInterrupted("interrupted before the first update (nothing to save); "
                                   "run the same command again to start")
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        # Saving takes every worker; an interrupted one cannot count on the others.
        return TrainingInterrupted(
            f"interrupted at step {step} of {total_steps}; the run resumes from its last "
            f"checkpoint ({saver.manager.latest_checkpoint or 'none yet'}) when started again")
    if saver.last_saved != step:
        save_checkpoint(saver.manager, step)
        saver.last_saved = step
    return TrainingInterrupted(f"interrupted at step {step} of {total_steps}; saved "
                               f"{saver.manager.latest_checkpoint}. Run the same command again "
                               "to resume from it")


def _pad_to(array, length, fill):
    pad = [(0, 0), (0, length - array.shape[1])] + [(0, 0)] * (array.ndim - 2)
    return np.pad(array, pad, constant_values=fill)


# model -> {(strategy, jit): its traced prediction step}: evaluation while
# training predicts many times with one model, and each new tf.function
# traces again.
_PREDICTION_STEPS = weakref.WeakKeyDictionary()


def _prediction_step(model, strategy, jit=False):
    steps = _PREDICTION_STEPS.setdefault(model, {})
    if (strategy, jit) in steps:  # (a strategy is hashed by identity)
        return steps[strategy, jit]
    # With XLA, the model's forward pass is one compiled function; the
    # strategy's gathering stays outside it.
    forward = tf.function(lambda inputs: model(inputs, training=False), jit_compile=True) \
        if jit else functools.partial(model, training=False)

    @tf.function(reduce_retracing=True)
    def step(inputs):
        def replica_fn(inputs):
            outputs = dict(forward(inputs))
            outputs["example_index"] = inputs["example_index"]
            return outputs

        per_replica = strategy.run(replica_fn, args=(inputs,))
        return {k: strategy.gather(v, axis=0) for k, v in per_replica.items()}

    steps[strategy, jit] = step
    return step


def predict(model, strategy, features, batch_size, batch_length, progress=None, jit=False):
    """Model outputs for every example of `features`, in example order.

    progress: an `albert_tf.progress.Progress` counting the examples, or None.
    jit: compile the model's forward pass with XLA (then `batch_length`
        should round lengths to a few buckets: XLA compiles once per shape).

    Each global batch is split across replicas and the per-replica outputs
    are gathered from all replicas (and workers), so every example is
    predicted exactly once whatever the strategy; the padding examples that
    fill the last batch are dropped. The outputs a model lists in its
    `token_outputs` attribute are per token: each batch's are padded back to
    `max_seq_length` with -inf.

    Returns:
        dict name -> array with `len(features)` rows.
    """
    batches = eval_batches(features.lengths, batch_size)
    dataset = distributed_dataset(strategy, features, batches, batch_length)
    step = _prediction_step(model, strategy, jit)
    token_outputs = getattr(model, "token_outputs", ())
    collected = {}
    for batch, (inputs, _) in zip(batches, dataset):
        for name, value in step(inputs).items():
            value = keras.ops.convert_to_numpy(value)
            if name in token_outputs:
                value = _pad_to(value, features.max_seq_length, -np.inf)
            collected.setdefault(name, []).append(value)
        if progress is not None:
            progress.update(int(np.sum(batch >= 0)))
    if progress is not None:
        progress.close()
    outputs = {k: np.concatenate(v) for k, v in collected.items()}
    index = outputs.pop("example_index")
    keep = index >= 0
    order = np.argsort(index[keep], kind="stable")
    if len(order) != len(features) or not np.array_equal(index[keep][order],
                                                         np.arange(len(features))):
        raise RuntimeError("distributed prediction lost or duplicated examples")
    return {k: v[keep][order] for k, v in outputs.items()}
