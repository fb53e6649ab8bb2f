"""Pretraining: MLM + SOP on TFRecords from `create_pretraining_data`.

`run_pretraining(settings)` is the library entry point behind
`python -m albert_tf.pretrain`. It shares the fine-tuning engine (resumable
checkpoints, divergence guard, progress, TensorBoard) and writes the result
in albert_tf's format with both heads, which `finetune --init_checkpoint`
reads.
"""

import glob
import json
import os

import numpy as np
import tensorflow as tf

from albert_tf import checkpoints
from albert_tf.errors import op_message
from albert_tf.backbone import AlbertBackbone
from albert_tf.config import AlbertConfig, preset_names
from albert_tf.io_utils import atomic_file
from albert_tf.models.pretraining import AlbertPretrainingModel
from albert_tf.tokenizer.loading import load_tokenizer
from albert_tf.pretraining.sentence_scores import binary_scores
from albert_tf.pretraining.train_settings import SETTINGS_FILE
from albert_tf.training import engine
from albert_tf.training.settings import DEFAULT_MODEL
from albert_tf.training.setup import start_run

def expand_files(patterns, what="--input_files"):
    """Files matching comma-separated globs; an empty match is an error."""
    files = sorted({f for p in patterns.split(",") if p for f in glob.glob(p)})
    if not files:
        raise FileNotFoundError(f"{what}: no file matches {patterns!r}")
    return files


def check_records(patterns, what="--input_files"):
    """`expand_files`, and a folder or a file whose first record is not a TFRecord
    is an error naming `what` and the path (before any work)."""
    files = expand_files(patterns, what)
    for path in files:
        if os.path.isdir(path):
            raise IsADirectoryError(f"{what}: {path} is a folder; give its TFRecord files "
                                    f"(e.g. {os.path.join(path, '*.tfrecord')})")
        try:
            for _ in tf.data.TFRecordDataset(path).take(1):
                pass
        except tf.errors.OpError as e:
            raise ValueError(f"{what}: {path}: not a TFRecord file (create_pretraining_data "
                             f"writes them): {op_message(e.message)}") from None
    return files


def new_model_config(settings, tokenizer=None):
    """The `AlbertConfig` of a new model (not loaded from `--init_checkpoint`):
    the preset or file of `--model`, sized to `tokenizer`'s vocabulary."""
    name = settings.model or DEFAULT_MODEL
    config = (AlbertConfig.preset(name) if name in preset_names()
              else AlbertConfig.from_json_file(name))
    if tokenizer is not None:
        config = config.replace(vocabulary_size=tokenizer.vocabulary_size)
    return config


def build_model(settings, policy, tokenizer=None):
    """The pretraining model: from a checkpoint, grown from one, or new (sized to
    `tokenizer`'s vocabulary when there is one)."""
    unroll = settings.layer_execution == "unrolled"
    if settings.init_checkpoint and not settings.init_from_group0:
        return checkpoints.load_pretrained(settings.init_checkpoint, with_heads=True,
                                           dtype=policy, recompute=settings.recompute,
                                           unroll=unroll, sentence_task=settings.sentence_task)
    config = new_model_config(settings, tokenizer)
    model = AlbertPretrainingModel(AlbertBackbone(config, dtype=policy,
                                                  recompute=settings.recompute, unroll=unroll),
                                   sentence_task=settings.sentence_task)
    if settings.init_from_group0:
        checkpoints.init_from_group0(model, settings.init_checkpoint)
    return model


def _dataset_fn(settings, files, strategy, repeat=True, seed=None):
    """A function of an `InputContext`: that pipeline's per-replica batches."""
    from albert_tf.pretraining import pretraining_dataset

    micro_batch = settings.batch_size // settings.accumulation_steps

    def dataset_fn(context):
        dataset = pretraining_dataset(
            files, context.get_per_replica_batch_size(micro_batch), settings.max_seq_length,
            settings.max_predictions_per_seq, shuffle_seed=seed, repeat=repeat)
        return dataset.shard(context.num_input_pipelines, context.input_pipeline_id)

    return dataset_fn


def make_train_dataset(settings, strategy):
    """`make_dataset` for the engine: a seeded stream that skips what is done."""
    dataset_fn = _dataset_fn(settings, expand_files(settings.input_files), strategy,
                             seed=settings.seed)
    local = strategy.num_replicas_in_sync  # per-replica batches yielded per step, all pipelines

    def make(start):
        def skipped(context):
            per_pipeline = local // context.num_input_pipelines
            return dataset_fn(context).skip(start * per_pipeline)

        return strategy.distribute_datasets_from_function(skipped)

    return make


class HeldoutScores:
    """MLM and sentence-task accuracy of `model` on held-out records, with what
    they mean; called with the settings naming the records (`eval_files`,
    `eval_batches`, the lengths and batch size).

    Baselines: always the most frequent masked token of the evaluated batches
    (MLM) and always the more frequent sentence label (SOP or NSP, whichever
    the records hold); the sentence accuracy also as a balanced accuracy and
    with its 95% interval (`sentence_scores.binary_scores`).

    The evaluation step is traced at the first call and serves every later one
    (records of the same shapes): a step traced anew at each evaluation cost a run
    scored every few hundred updates its tracing each time.
    """

    def __init__(self, model, strategy):
        self.strategy = strategy

        def replica(inputs, labels):
            out = model(inputs, training=False)
            weights = tf.cast(labels["mask_weights"], tf.float32)
            predicted = tf.cast(tf.argmax(out["mlm_logits"], -1), tf.int32)
            hits = tf.cast(tf.equal(predicted, tf.cast(labels["mask_ids"], tf.int32)), tf.float32)
            return (tf.reduce_sum(hits * weights), tf.reduce_sum(weights),
                    tf.cast(tf.argmax(out["sop_logits"], -1), tf.int32))

        self.step = tf.function(lambda inputs, labels: strategy.run(replica, args=(inputs, labels)),
                                reduce_retracing=True)  # (a last, smaller batch)

    def __call__(self, settings):
        strategy = self.strategy
        files = expand_files(settings.eval_files, "--eval_files")
        dataset = strategy.distribute_datasets_from_function(
            _dataset_fn(settings, files, strategy, repeat=False))
        totals = np.zeros(2)
        masked, orders, guesses = [], [], []
        for i, (inputs, labels) in enumerate(dataset):
            if i >= settings.eval_batches:
                break
            hits, weights, guessed = self.step(inputs, labels)
            totals += [float(strategy.reduce("SUM", hits, axis=None)),
                       float(strategy.reduce("SUM", weights, axis=None))]
            guesses += [g.numpy().reshape(-1) for g in strategy.experimental_local_results(guessed)]
            for ids, w, sop in zip(*(strategy.experimental_local_results(labels[k])
                                     for k in ("mask_ids", "mask_weights", "sop_label"))):
                masked.append(ids.numpy()[w.numpy() > 0])
                orders.append(sop.numpy().reshape(-1))
        masked, orders = np.concatenate(masked), np.concatenate(orders)
        sentence = binary_scores(orders, np.concatenate(guesses))
        task = settings.sentence_task  # the task of --eval_files' labels
        return {"mlm_accuracy": totals[0] / max(totals[1], 1),
                "mlm_baseline_most_frequent_token": float(np.bincount(masked).max() / len(masked)),
                f"{task}_accuracy": sentence["accuracy"],
                f"{task}_baseline_majority": sentence["baseline"],
                f"{task}_balanced_accuracy": sentence["balanced_accuracy"],
                f"{task}_ci95": sentence["ci95"],
                "masked_tokens": int(totals[1]), "sequences": int(len(orders))}


def heldout_evaluator(scores, settings, chief=True, sentence=True):
    """With `settings.eval_every`: the `eval_history.Evaluator` that scores
    `settings.eval_files` with `scores` (a `HeldoutScores`) every N updates and at
    the last one, into `eval_history.jsonl` and TensorBoard's `eval_heldout/`, the
    progress line showing `heldout_sop_accuracy` beside `heldout_sop_baseline_majority`
    (`nsp_` for `settings.sentence_task="nsp"`; for a model trained without its
    sentence head, `sentence=False`: `heldout_mlm_accuracy`); else None."""
    if not settings.eval_every:
        return None
    from albert_tf.training import eval_history
    from albert_tf.training.run_folder import TENSORBOARD_DIR

    task = settings.sentence_task
    steps = eval_history.evaluation_steps(settings.eval_every, settings.train_steps,
                                          settings.batch_size, None)
    return eval_history.Evaluator(
        lambda: {"heldout": scores(settings)}, steps, ("heldout",),
        epoch_of=lambda step: None,
        selection=eval_history.Selection(f"{task}_accuracy" if sentence else "mlm_accuracy",
                                         greater=True),
        history_path=os.path.join(settings.output_dir, "eval_history.jsonl"),
        summary_dir=os.path.join(settings.output_dir, TENSORBOARD_DIR), chief=chief,
        shown=(f"{task}_accuracy", f"{task}_baseline_majority") if sentence
        else ("mlm_accuracy",))


def _vocabulary(settings, verbose):
    """The host tokenizer the saved model folder keeps: `--vocab_file`'s, else the
    `--init_checkpoint`'s own (continued pretraining), else None (the records hold
    token ids; the folder then has no vocabulary, and says so)."""
    if settings.vocab_file:
        return load_tokenizer(settings.vocab_file, host=True)
    if settings.init_checkpoint:
        try:
            return load_tokenizer(settings.init_checkpoint, host=True)
        except FileNotFoundError as e:
            if verbose:
                print(f"warning: the model folder will hold no vocabulary ({e}); "
                      "fine-tuning from it needs --vocab_file", flush=True)
    return None


def run_pretraining(settings, verbose=True):
    """Pretrains as `settings` say; returns the results (also in `pretrain_results.json`)."""
    check_records(settings.input_files)  # before any work: the inputs are records
    if settings.eval_files:
        check_records(settings.eval_files, "--eval_files")
    tokenizer = _vocabulary(settings, verbose)
    # The model: its positions are checked (and XLA and layer execution measured on it).
    config = (checkpoints.read_checkpoint(settings.init_checkpoint)[1]
              if settings.init_checkpoint and not settings.init_from_group0
              else new_model_config(settings, tokenizer))
    problem = config.length_problem(settings.max_seq_length)
    if problem:
        raise ValueError(problem)
    measured = "auto" in (settings.xla, settings.layer_execution)
    setup = start_run(settings, SETTINGS_FILE, config if measured else None)
    settings, strategy = setup.settings, setup.strategy
    with strategy.scope():
        model = build_model(settings, setup.policy, tokenizer)
    setup.compile(model)
    if verbose and setup.chief:
        print(f"device: {setup.describe()}; a backbone of {model.backbone.count_params():,} "
              "parameters", flush=True)
    results = {"precision": setup.policy, "xla": setup.jit, "replicas": setup.replicas}
    scores = HeldoutScores(model, strategy)
    if settings.eval_files and settings.init_checkpoint:  # where continued pretraining starts
        results["eval_init_checkpoint"] = scores(settings)
    evaluator = heldout_evaluator(scores, settings, setup.chief)
    results["train"] = engine.train(model, strategy, make_train_dataset(settings, strategy),
                                    settings, settings.output_dir, verbose, setup.worker,
                                    evaluator=evaluator)
    if settings.eval_files:
        step, latest = evaluator.latest if evaluator else (None, None)
        results["eval"] = (latest["heldout"] if step == results["train"]["step"]
                           else scores(settings))
    if setup.chief:
        with atomic_file(os.path.join(settings.output_dir, "pretrain_results.json")) as f:
            json.dump(results, f, indent=2, sort_keys=True)
        checkpoints.save_pretrained(model, os.path.join(settings.output_dir, "model"),
                                    tokenizer=tokenizer)
    return results
