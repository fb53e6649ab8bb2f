"""Sentence and sentence-pair classification/regression: the GLUE task type.

Each `tasks.glue.GlueSpec` row becomes a registered task; the model is
`AlbertClassifier` on the pooled `[CLS]` output.
"""

import os

import numpy as np

from albert_tf.data import Features
from albert_tf.models import AlbertClassifier
from albert_tf.tokenizer import pack_host
from tasks import glue, metrics, register
from tasks.base import Task


def encode_pairs(examples, tokenizer, max_seq_length):
    """Packed `[CLS] a [SEP] (b [SEP])` arrays of `examples`, (N, max_seq_length)."""
    ids_a = tokenizer.encode_batch([e.text_a for e in examples])
    has_b = [e.text_b is not None for e in examples]
    ids_b = tokenizer.encode_batch([e.text_b for e in examples if e.text_b is not None])
    ids_b = iter(ids_b)
    rows = [pack_host(a, next(ids_b) if b else None, max_seq_length, tokenizer.cls_id,
                      tokenizer.sep_id, tokenizer.pad_id) for a, b in zip(ids_a, has_b)]
    arrays = {name: np.stack([r[name] for r in rows]) for name in ("token_ids", "segment_ids")}
    lengths = np.array([r["padding_mask"].sum() for r in rows], np.int32)
    return arrays, lengths


class GlueTask(Task):
    """A GLUE task defined by its `GlueSpec` row."""

    def __init__(self, spec):
        self.spec = spec
        self.name = spec.name
        self.eval_splits = tuple(spec.eval_splits)
        self.test_splits = tuple(spec.test_splits)

    @property
    def is_regression(self):
        return self.spec.labels is None

    def read_examples(self, data_dir, split, options=None):
        if not data_dir:
            raise ValueError(f"--data_dir is required for task {self.name!r} "
                             f"(the GLUE folder {self.spec.folder})")
        return glue.read_examples(self.spec, data_dir, split)

    def featurize(self, examples, tokenizer, settings, split):
        arrays, lengths = encode_pairs(examples, tokenizer, settings.max_seq_length)
        if split in self.test_splits:
            return Features(arrays, lengths)
        if self.is_regression:
            arrays["label"] = np.array([e.label for e in examples], np.float32)
        else:
            arrays["label"] = np.array([glue.label_id(self.spec, e.label) for e in examples],
                                       np.int32)
        return Features(arrays, lengths, label_keys=("label",))

    def build_model(self, backbone, settings, head=None):
        num_classes = 1 if self.is_regression else len(self.spec.labels)
        return AlbertClassifier(backbone, num_classes, dropout=settings.classifier_dropout)

    def predictions(self, outputs):
        logits = outputs["logits"]
        return logits[:, 0] if self.is_regression else np.argmax(logits, axis=-1)

    def evaluate(self, run, split):
        labels = run.features(split).arrays["label"]
        predicted = self.predictions(run.outputs(split))
        results = glue.compute_metrics(self.spec, labels, predicted)
        if self.is_regression:  # beside the mean predictor's
            results["mse"] = float(np.mean((np.asarray(labels, np.float64) - predicted) ** 2))
        results.update(self.baseline(labels))
        results["examples"] = len(labels)
        return results

    def baseline(self, labels):
        """The trivial baseline's scores on the split: the mean predictor (STS-B)
        or the split's majority class, every metric of it as `baseline_*`
        (a constant has no correlation: STS-B's is its squared error)."""
        if self.is_regression:
            return {"baseline_mse": metrics.mean_predictor_mse(labels)}
        always = metrics.majority_predictions(labels)
        base = glue.compute_metrics(self.spec, labels, always)
        return {"baseline_label": glue.label_name(self.spec, always[0]),
                **{f"baseline_{k}": v for k, v in base.items()}}

    def write_predictions(self, run, split):
        path = os.path.join(run.output_dir, glue.submission_name(self.spec, split))
        glue.write_submission(self.spec, split, run.examples(split),
                              self.predictions(run.outputs(split)), path)
        return path

    def serving_module(self, model, tokenizer, settings, model_dir, export_options):
        from albert_tf.export.classification import ClassifierServing

        self.check_export_options(export_options)
        pair = self.spec.labelled.text_b is not None
        module = ClassifierServing(model, tokenizer, settings.max_seq_length, self.spec.labels,
                                   pair)
        return module, {"inputs": ["text_a", "text_b"] if pair else ["text"],
                        "labels": self.spec.labels}


for _spec in glue.SPECS.values():
    register(GlueTask(_spec))
