"""A fine-tuning run: data, model, training, evaluation, predictions, export.

`run(task, settings)` is the library entry point behind
`python -m albert_tf.finetune`; it reads no flags. The task (see
`tasks.base.Task`) supplies reading, featurization, the model head, metrics
and prediction files; this module supplies everything generic.
"""

import json
import logging
import os

import numpy as np

from albert_tf import checkpoints
from albert_tf.backbone import AlbertBackbone
from albert_tf.config import AlbertConfig, preset_names
from albert_tf.data import padded_length
from albert_tf.data.features import cache_key, cached
from albert_tf.io_utils import atomic_file
from albert_tf.checkpoints import load_tokenizer
from albert_tf.training import engine
from albert_tf.training.settings import SETTINGS_FILE
from albert_tf.training.setup import start_run

MODEL_DIR = "model"
RESULTS_FILE = "eval_results.json"


def run_tokenizer(settings):
    """The host tokenizer of a run: `--vocab_file`, else the checkpoint's own vocabulary."""
    if settings.vocab_file:
        if not os.path.isfile(settings.vocab_file):
            raise FileNotFoundError(f"--vocab_file: no such file {settings.vocab_file}")
        return load_tokenizer(settings.vocab_file, host=True)
    if settings.init_checkpoint:
        return load_tokenizer(settings.init_checkpoint, host=True)
    raise ValueError("no vocabulary: pass --vocab_file (or an --init_checkpoint that ships one)")


def model_config(settings, checkpoint, vocabulary_size):
    """The model's `AlbertConfig`: the checkpoint's, or `settings.model` (a preset or
    a config file) sized to the tokenizer's vocabulary."""
    if checkpoint is not None:
        config = checkpoint[1]
    elif settings.model in preset_names():
        config = AlbertConfig.preset(settings.model, vocabulary_size=vocabulary_size)
    else:
        config = AlbertConfig.from_json_file(settings.model).replace(
            vocabulary_size=vocabulary_size)
    if config.vocabulary_size != vocabulary_size:
        raise ValueError(f"the model's vocabulary ({config.vocabulary_size}) does not match the "
                         f"tokenizer's ({vocabulary_size})")
    return config


def build_model(task, settings, policy, vocabulary_size):
    """The task model: pretrained (backbone, and head if the checkpoint has one)
    from `settings.init_checkpoint`, or randomly initialised from `settings.model`."""
    checkpoint = (checkpoints.read_checkpoint(settings.init_checkpoint)
                  if settings.init_checkpoint else None)
    config = model_config(settings, checkpoint, vocabulary_size).replace(
        dropout=settings.dropout, attention_dropout=settings.dropout)
    backbone = AlbertBackbone(config, dtype=policy, recompute=settings.recompute)
    model = task.build_model(backbone, settings)
    if checkpoint is None:
        logging.warning("no --init_checkpoint: training %s from a random initialisation",
                        settings.model)
    elif checkpoints.load_task_weights(model, checkpoint):
        logging.info("%s: loaded the fine-tuned %s head too", checkpoint[3], model.head_kind)
    return model


class Run:
    """The state of one run: its setup (strategy, precision), tokenizer, model, batch lengths."""

    def __init__(self, task, settings):
        task.options(settings)  # reject unknown task options before any work
        self.task = task
        self.tokenizer = run_tokenizer(settings)
        self.setup = start_run(settings, SETTINGS_FILE)
        self.settings = settings = self.setup.settings
        self.strategy = self.setup.strategy
        with self.strategy.scope():
            self.model = build_model(task, settings, self.setup.policy,
                                     self.tokenizer.vocabulary_size)
        self.setup.compile(self.model)
        # XLA compiles once per shape: pad to a few bucket lengths, not to multiples of 8.
        buckets = sorted({min(b, settings.max_seq_length) for b in (64, 128, 256, 384, 512)}
                         | {settings.max_seq_length}) if self.setup.jit else None
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
            key = cache_key(self.task.name, split, s.data_dir, s.max_seq_length,
                            self.tokenizer.fingerprint(), sorted(s.task_options.items()),
                            len(examples))
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
                              self.settings.output_dir, verbose, self.setup.worker)
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

    Writes into `settings.output_dir`: `settings.json` (with the precision
    and XLA choice made), `checkpoints/`, `tensorboard/`, `eval_results.json`,
    prediction files, and `model/` (the fine-tuned model in albert_tf's
    format, with its vocabulary).
    """
    current = Run(task, settings)
    settings, setup = current.settings, current.setup
    results = {"task": task.name, "precision": setup.policy, "xla": setup.jit,
               "replicas": setup.replicas}
    if settings.do_train:
        results["train"] = current.train(verbose)
    if settings.do_eval:
        for split in task.eval_splits:
            results[split] = task.evaluate(current, split)
    if settings.do_predict:
        results["predictions"] = {split: task.write_predictions(current, split)
                                  for split in task.test_splits}
    if setup.chief:
        _write_json(os.path.join(settings.output_dir, RESULTS_FILE), results)
        save_finetuned(current.model, task, settings,
                       os.path.join(settings.output_dir, MODEL_DIR), current.tokenizer)
    return results


def save_finetuned(model, task, settings, directory, tokenizer):
    """Writes a fine-tuned model folder (what `tasks.finetuned.load_finetuned` reads):
    the weights with the task head, the task, the run's settings and the
    tokenizer's vocabulary."""
    return checkpoints.save_pretrained(
        model, directory, tokenizer=tokenizer,
        extra={"task": task.name, "head": model.head_config(), "settings": settings.to_dict()})
