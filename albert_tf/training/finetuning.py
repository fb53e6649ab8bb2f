"""A fine-tuning run: data, model, training, evaluation, predictions, export.

`run(task, settings)` is the library entry point behind
`python -m albert_tf.finetune`; it reads no flags. The task (see
`tasks.base.Task`) supplies reading, featurization, the model head, metrics
and prediction files; this module supplies everything generic.
"""

import json
import logging
import os

import keras
import numpy as np

from albert_tf import checkpoints
from albert_tf.backbone import AlbertBackbone
from albert_tf.config import AlbertConfig, preset_names
from albert_tf.data import padded_length
from albert_tf.data.features import cache_key, cached
from albert_tf.io_utils import atomic_file
from albert_tf.training import engine
from albert_tf.training.devices import make_strategy, resolve_precision
from albert_tf.training.optimizers import create_optimizer

MODEL_DIR = "model"
RESULTS_FILE = "eval_results.json"


def worker_index(strategy):
    """None for the chief (or a single-machine run), else this worker's index."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type or resolver.task_type == "chief":
        return None
    if resolver.task_type == "worker" and resolver.task_id == 0 and \
            "chief" not in resolver.cluster_spec().as_dict():
        return None
    return resolver.task_id


def spm_model_path(settings):
    """The SentencePiece model of a run: the flag, or the checkpoint's own."""
    if settings.spm_model:
        if not os.path.isfile(settings.spm_model):
            raise FileNotFoundError(f"--spm_model: no such file {settings.spm_model}")
        return settings.spm_model
    if settings.init_checkpoint:
        found = checkpoints.find_spm_model(checkpoints.download.resolve(settings.init_checkpoint))
        if found:
            return found
    raise ValueError("no SentencePiece model: pass --spm_model (the checkpoint folder has none)")


def build_model(task, settings, policy, vocabulary_size):
    """The task model: pretrained (backbone, and head if the checkpoint has one)
    from `settings.init_checkpoint`, or randomly initialised from `settings.model`."""
    dropout = {"dropout": settings.dropout, "attention_dropout": settings.dropout}
    checkpoint = None
    if settings.init_checkpoint:
        checkpoint = checkpoints.read_checkpoint(settings.init_checkpoint)
        config = checkpoint[1]
    elif settings.model in preset_names():
        config = AlbertConfig.preset(settings.model, vocabulary_size=vocabulary_size)
    else:
        config = AlbertConfig.from_json_file(settings.model).replace(
            vocabulary_size=vocabulary_size)
    if config.vocabulary_size != vocabulary_size:
        raise ValueError(f"the model's vocabulary ({config.vocabulary_size}) does not match the "
                         f"SentencePiece model's ({vocabulary_size})")
    backbone = AlbertBackbone(config.replace(**dropout), dtype=policy, remat=settings.recompute)
    model = task.build_model(backbone, settings)
    if checkpoint is None:
        logging.warning("no --init_checkpoint: training %s from a random initialisation",
                        settings.model)
    elif checkpoints.load_task_weights(model, checkpoint):
        logging.info("%s: loaded the fine-tuned %s head too", checkpoint[3], model.head_kind)
    return model


class Run:
    """The state of one run: strategy, tokenizer, model, batch lengths."""

    def __init__(self, task, settings):
        self.task, self.settings = task, settings
        task.options(settings)  # reject unknown task options before any work
        keras.utils.set_random_seed(settings.seed)
        self.strategy = make_strategy(settings.strategy, settings.tpu)
        self.policy, self.jit = resolve_precision(settings.precision, settings.xla,
                                                  self.strategy)
        self.worker = worker_index(self.strategy)
        self.chief = self.worker is None
        self.spm_model = spm_model_path(settings)
        self.tokenizer = task.make_tokenizer(self.spm_model)
        with self.strategy.scope():
            self.model = build_model(task, settings, self.policy,
                                     self.tokenizer.vocabulary_size)
            optimizer = create_optimizer(
                settings.optimizer, settings.learning_rate, settings.train_steps,
                settings.warmup_steps, settings.weight_decay, settings.clip_norm,
                settings.accumulation_steps)
            if self.policy == "mixed_float16":
                # float16 gradients underflow without dynamic loss scaling.
                optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
            self.model.compile(optimizer=optimizer, jit_compile=self.jit)
        # XLA compiles once per shape: pad to a few bucket lengths, not to multiples of 8.
        buckets = sorted({min(b, settings.max_seq_length) for b in (64, 128, 256, 384, 512)}
                         | {settings.max_seq_length}) if self.jit else None
        if settings.fixed_padding:
            buckets = [settings.max_seq_length]
        self.batch_length = lambda lengths: padded_length(
            lengths, settings.max_seq_length, buckets=buckets)
        self._examples, self._features, self._outputs = {}, {}, {}

    @property
    def output_dir(self):
        return self.settings.output_dir

    def examples(self, split):
        if split not in self._examples:
            self._examples[split] = self.task.read_examples(self.settings.data_dir, split)
        return self._examples[split]

    def features(self, split):
        """`Features` of a split, featurized once and cached on disk."""
        if split not in self._features:
            s, examples = self.settings, self.examples(split)
            key = cache_key(self.task.name, split, s.data_dir, s.max_seq_length, self.spm_model,
                            sorted(s.task_options.items()), len(examples))
            path = os.path.join(s.output_dir, "features", f"{split}-{key}.npz")
            self._features[split] = cached(path, lambda: self.task.featurize(
                examples, self.tokenizer, s, split))
        return self._features[split]

    def outputs(self, split):
        """The model's outputs on every example of a split (cached until trained again)."""
        if split not in self._outputs:
            self._outputs[split] = engine.predict(
                self.model, self.strategy, self.features(split),
                self.settings.eval_batch_size, self.batch_length)
        return self._outputs[split]

    def train(self, verbose=True):
        features = self.features(self.task.train_split)
        make_dataset = engine.planned_dataset(self.strategy, features, self.settings,
                                              self.batch_length)
        result = engine.train(self.model, self.strategy, make_dataset, self.settings,
                              self.settings.output_dir, verbose, self.worker)
        self._outputs.clear()
        return {**result, "examples": len(features)}


def _write_json(path, values):
    with atomic_file(path) as f:
        json.dump(values, f, indent=2, sort_keys=True, default=_json_default)


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def run(task, settings, verbose=True):
    """Fine-tunes, evaluates and predicts as `settings` say; returns the results.

    Writes into `settings.output_dir`: `settings.json`, `checkpoints/`,
    `tensorboard/`, `eval_results.json`, prediction files, and `model/` (the
    fine-tuned model in albert_tf's format, with its SentencePiece model).
    """
    os.makedirs(settings.output_dir, exist_ok=True)
    current = Run(task, settings)
    if current.chief:
        settings.save(settings.output_dir)
    results = {"task": task.name, "precision": current.policy, "xla": current.jit,
               "replicas": current.strategy.num_replicas_in_sync}
    if settings.do_train:
        results["train"] = current.train(verbose)
    if settings.do_eval:
        for split in task.eval_splits:
            results[split] = task.evaluate(current, split)
    if settings.do_predict:
        results["predictions"] = {split: task.write_predictions(current, split)
                                  for split in task.test_splits}
    if current.chief:
        _write_json(os.path.join(settings.output_dir, RESULTS_FILE), results)
        save_finetuned(current.model, task, settings,
                       os.path.join(settings.output_dir, MODEL_DIR), current.spm_model)
    return results


def save_finetuned(model, task, settings, directory, spm_model):
    """Writes a fine-tuned model folder (what `tasks.finetuned.load_finetuned` reads):
    the weights with the task head, the task, the run's settings and the
    SentencePiece model."""
    return checkpoints.save_pretrained(
        model, directory, spm_model=spm_model,
        extra={"task": task.name, "head": model.head_config(), "settings": settings.to_dict()})
