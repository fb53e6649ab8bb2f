"""Pretraining one variant under the grid's budget, and scoring it on held-out text.

Every variant runs through the pretraining trainer's pieces (`start_run`, the
resumable `engine.train`, `trainer.HeldoutScores`), so a killed variant resumes
from its last checkpoint. Variants with `sentence_task=none` train
`MaskedLMOnlyModel`: the same model and heads, with the sentence loss left
out (the paper's "None" row of Table 5).

Scoring (held-out text, never trained on): MLM accuracy and cross-entropy on
the held-out SOP pairs (the same sequences for every variant), and both
sentence tasks on held-out NSP and SOP pairs, as the paper's Table 5 does:
through the variant's own sentence head whichever task it trained on, or, for
a variant trained without one, through a linear probe of its pooled output
fit on training pairs. Each sentence figure comes with its majority baseline,
balanced accuracy and 95% interval (`pretraining.sentence_scores`).
"""

import json
import math
import os
import time

import keras
from keras import ops

from albert_tf import checkpoints
from albert_tf.ablation.data import data_task, record_pattern
from albert_tf.backbone import AlbertBackbone
from albert_tf.io_utils import atomic_file
from albert_tf.models.losses import replica_mean, sparse_cross_entropy
from albert_tf.models.pretraining import AlbertPretrainingModel
from albert_tf.pretraining import sentence_scores, trainer
from albert_tf.pretraining.train_settings import SETTINGS_FILE, PretrainSettings
from albert_tf.training import engine
from albert_tf.training.devices import POLICY
from albert_tf.training.setup import start_run

PRETRAIN_DIR = "pretrain"
TRAIN_FILE = "train_result.json"
EVAL_FILE = "eval_result.json"
BUDGET_FILE = "budget.json"
# The grid's measured seconds per update, one entry per architecture
# (`Variant.architecture`: NSP and SOP records have the same shapes, and the
# MLM-only model leaves out only the pooler's and the sentence head's gradients).
STEP_SECONDS_FILE = "step_seconds.json"
# A variant's seconds per update (--budget_seconds) are the median of updates timed
# for this long, or for a fiftieth of the budget when that is less (at least
# CALIBRATION_STEPS of them), after WARMUP_STEPS untimed ones.
CALIBRATION_SECONDS = 5.0
CALIBRATION_STEPS = 5
WARMUP_STEPS = 3
# Training batches a linear probe is fit on (a variant without a sentence head).
PROBE_BATCHES = 64


class MaskedLMOnlyModel(AlbertPretrainingModel):
    """`AlbertPretrainingModel` trained on the masked-LM loss alone.

    The sentence head and the pooler (which only the sentence head reads) are
    kept, so that the checkpoint has the usual layout, but frozen: no loss
    reaches them.
    """

    def __init__(self, backbone, **kwargs):
        super().__init__(backbone, **kwargs)
        self.sop_head.trainable = False
        backbone.pooler.trainable = False

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        weights = ops.cast(y["mask_weights"], "float32")  # (batch, predictions)
        mlm = sparse_cross_entropy(y["mask_ids"], y_pred["mlm_logits"])
        total = ops.maximum(ops.sum(weights), 1.0)
        hits = ops.cast(ops.equal(ops.argmax(y_pred["mlm_logits"], -1),
                                  ops.cast(y["mask_ids"], "int32")), "float32")
        self.mlm_accuracy.update_state(ops.sum(hits * weights) / total)
        return replica_mean(ops.reshape(ops.sum(mlm * weights) / total, (1,)))

    @property
    def metrics(self):  # no sentence-task figures: nothing trains or updates them
        return [m for m in super().metrics
                if m not in (self.sentence_accuracy, self.sentence_baseline)]


def build_model(variant, config, policy):
    backbone = AlbertBackbone(config, dtype=policy)
    if variant.sentence_task == "none":
        return MaskedLMOnlyModel(backbone)
    return AlbertPretrainingModel(backbone, sentence_task=variant.sentence_task)


def pretrain_settings(settings, variant, data_folder, folder, steps):
    """The `PretrainSettings` of one variant's run in `folder`."""
    return PretrainSettings(
        input_files=record_pattern(data_folder, data_task(variant.sentence_task), "train"),
        output_dir=folder, model=os.path.join(folder, "config.json"),
        vocab_file=settings.vocab_file, max_seq_length=settings.max_seq_length,
        max_predictions_per_seq=settings.max_predictions_per_seq,
        batch_size=settings.batch_size, train_steps=steps,
        warmup_steps=int(settings.warmup_fraction * steps),
        learning_rate=settings.learning_rate, optimizer=settings.optimizer,
        precision=settings.precision, xla="off", layer_execution="loop", strategy="one_device",
        seed=variant.seed, sentence_task=data_task(variant.sentence_task),
        checkpoint_every=max(1, steps // 4), log_every=max(1, steps // 50),
        eval_batches=settings.eval_batches, eval_every=settings.eval_every,
        eval_files=(record_pattern(data_folder, data_task(variant.sentence_task), "heldout")
                    if settings.eval_every else None))


def _read(path):
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _write(path, values):
    with atomic_file(path, encoding="utf-8") as f:
        json.dump(values, f, indent=2, sort_keys=True)


def measure_step_seconds(variant, config, settings, data_folder):
    """Seconds per update of this variant: the median of updates of a throwaway copy
    of it timed one by one for `CALIBRATION_SECONDS` or a fiftieth of the budget (at
    least `CALIBRATION_STEPS`), after `WARMUP_STEPS` untimed ones (tracing, the first
    allocations). A few timed updates alone were noisy: the same variant got 1,301
    and 2,231 updates of a 6-minute budget."""
    import statistics

    from albert_tf.pretraining import pretraining_dataset
    from albert_tf.training.optimizers import create_optimizer

    keras.utils.set_random_seed(variant.seed)
    model = build_model(variant, config, POLICY[settings.precision])
    # (a schedule longer than any calibration; the variant's own run is compiled alike)
    model.compile(optimizer=create_optimizer(settings.optimizer, settings.learning_rate,
                                             1_000_000, 0, 0.01, 1.0, 1),
                  jit_compile=False)  # as the variant's own run (xla="off")
    dataset = pretraining_dataset(
        record_pattern(data_folder, data_task(variant.sentence_task), "train"),
        settings.batch_size, settings.max_seq_length, settings.max_predictions_per_seq)
    batches = iter(dataset)
    for _ in range(WARMUP_STEPS):
        model.train_on_batch(*next(batches))
    timed = min(CALIBRATION_SECONDS, settings.budget_seconds / 50)
    times, start = [], time.perf_counter()
    while len(times) < CALIBRATION_STEPS or time.perf_counter() - start < timed:
        begun = time.perf_counter()
        model.train_on_batch(*next(batches))
        times.append(time.perf_counter() - begun)
    return statistics.median(times)


def step_seconds(settings, variant, config, data_folder):
    """`(seconds per update, the variant that was timed)` for `variant`'s
    architecture: measured once a grid (`measure_step_seconds`) and kept in its
    `STEP_SECONDS_FILE`, so that variants that cost the same get the same number
    of updates of a time budget. Timed apart, noise on a busy host gave the three
    sentence tasks of one architecture 2,096, 1,857 and 1,631 updates of the same
    6 minutes: the paper compares its objectives at equal updates."""
    path = os.path.join(settings.output_dir, STEP_SECONDS_FILE)
    saved = _read(path) or {}
    key = variant.architecture
    if key not in saved:
        seconds = measure_step_seconds(variant, config, settings, data_folder)
        saved[key] = {"seconds_per_step": seconds, "measured_with": variant.name}
        _write(path, saved)
    return saved[key]["seconds_per_step"], saved[key]["measured_with"]


def budget_steps(settings, variant, config, data_folder, folder, say=None):
    """The variant's updates under the grid's budget (decided once, then read back);
    a time budget's are told to `say` when decided: how many updates the seconds buy
    on this host is what a sentence head's learning depends on."""
    saved = _read(os.path.join(folder, BUDGET_FILE))
    if saved is not None:
        return saved["steps"]
    record = {}
    if settings.budget_steps is not None:
        steps = settings.budget_steps
    elif settings.budget_tokens is not None:
        steps = math.ceil(settings.budget_tokens / (settings.batch_size * settings.max_seq_length))
    else:
        seconds, timed = step_seconds(settings, variant, config, data_folder)
        steps = max(1, int(settings.budget_seconds / seconds))
        record = {"measured_seconds_per_step": seconds, "measured_with": timed}
        if say:
            say(f"budget: {settings.budget_seconds:g} s at {seconds:.3f} s an update (timed on "
                f"{timed}): {steps:,} updates")
    _write(os.path.join(folder, BUDGET_FILE), {**record, "steps": steps})
    return steps


def _train(run, variant, config, folder, verbose):
    """Trains (or resumes) the variant; returns the model and the training record."""
    setup = start_run(run, SETTINGS_FILE)
    with setup.strategy.scope():
        model = build_model(variant, config, setup.policy)
    setup.compile(model)
    evaluator = trainer.heldout_evaluator(trainer.HeldoutScores(model, setup.strategy),
                                          setup.settings, sentence=variant.sentence_task != "none")
    start = time.monotonic()
    result = engine.train(model, setup.strategy, trainer.make_train_dataset(setup.settings,
                                                                            setup.strategy),
                          setup.settings, folder, verbose, evaluator=evaluator)
    train = _read(os.path.join(folder, TRAIN_FILE))
    if train is None or result.get("train_examples_per_second"):
        train = {**result, "seconds": time.monotonic() - start,
                 "tokens_per_second": result.get("train_examples_per_second", 0.0)
                 * run.max_seq_length}
        _write(os.path.join(folder, TRAIN_FILE), train)
    return model, setup, train


def inference(model):
    """The model's forward pass (no dropout) traced once: called batch by batch
    eagerly, a small model spends most of its time in Python."""
    import tensorflow as tf

    return tf.function(lambda inputs: model(inputs, training=False), reduce_retracing=True)


def heldout_mlm_loss(forward, settings, pattern):
    """The masked-LM cross-entropy (nats per masked token) on held-out records,
    through `forward` (`inference`): finer than accuracy early in training, when
    every model still predicts the most frequent token."""
    from albert_tf.pretraining import pretraining_dataset

    dataset = pretraining_dataset(pattern, settings.batch_size, settings.max_seq_length,
                                  settings.max_predictions_per_seq, repeat=False)
    total, count = 0.0, 0.0
    for inputs, labels in dataset.take(settings.eval_batches):
        logits = forward(inputs)["mlm_logits"]
        loss = sparse_cross_entropy(labels["mask_ids"], logits)  # (batch, predictions)
        weights = ops.cast(labels["mask_weights"], "float32")
        total += float(ops.sum(loss * weights))
        count += float(ops.sum(weights))
    return total / max(count, 1.0)


def pooled_features(forward, settings, pattern, batches):
    """`(pooled outputs, sentence labels)` of up to `batches` batches of records,
    through `forward` (the model's traced forward pass, `inference`)."""
    import numpy as np

    from albert_tf.pretraining import pretraining_dataset

    dataset = pretraining_dataset(pattern, settings.batch_size, settings.max_seq_length,
                                  settings.max_predictions_per_seq, repeat=False)
    features, labels = [], []
    for inputs, targets in dataset.take(batches):
        features.append(ops.convert_to_numpy(forward(inputs)["pooled_output"]))
        labels.append(ops.convert_to_numpy(targets["sop_label"]).reshape(-1))
    return np.concatenate(features).astype("float32"), np.concatenate(labels)


def probe_scores(forward, settings, data_folder, task):
    """A variant without a sentence head, scored on `task` by a linear probe of
    its pooled output fit on `PROBE_BATCHES` batches of the task's training pairs."""
    features, labels = pooled_features(forward, settings,
                                       record_pattern(data_folder, task, "train"), PROBE_BATCHES)
    predict = sentence_scores.fit_linear_probe(features, labels)
    heldout, truth = pooled_features(forward, settings,
                                     record_pattern(data_folder, task, "heldout"),
                                     settings.eval_batches)
    return sentence_scores.binary_scores(truth, predict(heldout))


def score(model, setup, variant, data_folder):
    """MLM accuracy and loss, and both sentence tasks' scores, on held-out records.

    The sentence scores of each task: `<task>_accuracy`, `_baseline` (the more
    frequent label's share), `_balanced_accuracy`, `_ci95`, `_examples` and
    `_scored_by`: the variant's own sentence head, whichever task it trained on
    (label 0, "B follows A", means the same in both), or a linear probe for a
    variant trained without one.
    """
    forward, heldout = inference(model), trainer.HeldoutScores(model, setup.strategy)
    scores = {"mlm_loss": heldout_mlm_loss(forward, setup.settings,
                                           record_pattern(data_folder, "sop", "heldout"))}
    for task in ("sop", "nsp"):
        result = heldout(setup.settings.replace(
            eval_files=record_pattern(data_folder, task, "heldout"), sentence_task=task))
        if task == "sop":
            scores["mlm_accuracy"] = result["mlm_accuracy"]
            scores["mlm_baseline"] = result["mlm_baseline_most_frequent_token"]
        if variant.sentence_task == "none":
            sentence, by = probe_scores(forward, setup.settings, data_folder, task), "linear probe"
        else:
            sentence = {k: result[f"{task}_{k}"] for k in ("accuracy", "balanced_accuracy",
                                                           "ci95")}
            sentence.update(baseline=result[f"{task}_baseline_majority"],
                            examples=result["sequences"])
            by = f"{variant.sentence_task} head"
        scores.update({f"{task}_{k}": v for k, v in sentence.items()})
        scores[f"{task}_scored_by"] = by
    return scores


def pretrain_variant(settings, variant, config, tokenizer, data_folder, folder, verbose=True):
    """Pretrains and scores one variant in `folder/pretrain`; returns its record
    (`steps`, `train`, `scores`, `model_dir`). Done parts are read back."""
    folder = os.path.join(folder, PRETRAIN_DIR)
    os.makedirs(folder, exist_ok=True)
    _write(os.path.join(folder, "config.json"), config.to_dict())
    steps = budget_steps(settings, variant, config, data_folder, folder,
                         say=print if verbose else None)
    run = pretrain_settings(settings, variant, data_folder, folder, steps)
    model_dir = os.path.join(folder, "model")
    scores = _read(os.path.join(folder, EVAL_FILE))
    if scores is None or not os.path.isdir(model_dir):
        model, setup, train = _train(run, variant, config, folder, verbose)
        scores = score(model, setup, variant, data_folder)
        checkpoints.save_pretrained(model, model_dir, tokenizer=tokenizer)
        _write(os.path.join(folder, EVAL_FILE), scores)
    train = _read(os.path.join(folder, TRAIN_FILE))
    return {"steps": steps, "train": train, "scores": scores, "model_dir": model_dir}


def loss_curve(folder, tag="train/loss"):
    """`[(step, loss), ...]` of a variant's TensorBoard scalars (a resumed run's
    later files win for a step logged twice)."""
    import glob

    import tensorflow as tf

    points = {}
    pattern = os.path.join(folder, PRETRAIN_DIR, "tensorboard", "events.out.tfevents.*")
    for path in sorted(glob.glob(pattern), key=os.path.getmtime):
        for raw in tf.data.TFRecordDataset(path).as_numpy_iterator():
            event = tf.compat.v1.Event.FromString(raw)
            for value in event.summary.value:
                if value.tag == tag:
                    points[int(event.step)] = float(tf.make_ndarray(value.tensor))
    return sorted(points.items())
