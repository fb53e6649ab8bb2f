"""Sentence and sentence-pair classification/regression: the GLUE task type.

Each `tasks.glue.GlueSpec` row becomes a registered task; the model is
`AlbertClassifier` on the pooled `[CLS]` output.
"""

import os

import numpy as np

from albert_tf.models import AlbertClassifier
from albert_tf.tasks import glue, long_inputs, metrics, register
from albert_tf.tasks.base import Task
# noqa: F401 below: tasks import these from here.
from albert_tf.tasks.long_inputs import LongInputOptions, encode_pairs  # noqa: F401


class GlueTask(Task):
    """A GLUE task defined by its `GlueSpec` row."""

    options_class = LongInputOptions

    def __init__(self, spec):
        self.spec = spec
        self.name = spec.name
        self.primary_metric = spec.primary
        self.eval_splits = tuple(spec.eval_splits)
        self.test_splits = tuple(spec.test_splits)
        self.data_source = spec.source

    @property
    def is_regression(self):
        return self.spec.labels is None

    def read_examples(self, data_dir, split, options=None):
        if not data_dir:
            raise ValueError(f"--data_dir is required for task {self.name!r} "
                             f"(the GLUE folder {self.spec.folder})")
        return glue.read_examples(self.spec, data_dir, split)

    def featurize(self, examples, tokenizer, settings, split):
        labels = None
        if split not in self.test_splits:
            labels = np.array([e.label for e in examples], np.float32) if self.is_regression \
                else np.array([glue.label_id(self.spec, e.label) for e in examples], np.int32)
        return long_inputs.features(examples, tokenizer, settings.max_seq_length,
                                    self.options(settings), split, labels)

    def build_model(self, backbone, settings, head=None):
        num_classes = 1 if self.is_regression else len(self.spec.labels)
        return AlbertClassifier(backbone, num_classes, dropout=settings.classifier_dropout)

    def predictions(self, outputs):
        logits = outputs["logits"]
        return logits[:, 0] if self.is_regression else np.argmax(logits, axis=-1)

    def text_outputs(self, run, split):
        """The model's outputs per text (a text's windows averaged)."""
        return {"logits": long_inputs.per_text(run.features(split),
                                               run.outputs(split)["logits"])}

    def evaluate(self, run, split):
        labels = long_inputs.text_labels(run.features(split))
        predicted = self.predictions(self.text_outputs(run, split))
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
                              self.predictions(self.text_outputs(run, split)), path)
        return path

    def serving_module(self, model, tokenizer, settings, model_dir, export_options):
        from albert_tf.export.classification import ClassifierServing

        self.check_export_options(export_options)
        pair = self.spec.labelled.text_b is not None
        options = self.task_options
        module = ClassifierServing(model, tokenizer, settings.max_seq_length, self.spec.labels,
                                   pair, window_stride=long_inputs.serving_stride(options))
        return module, {"inputs": ["text_a", "text_b"] if pair else ["text"],
                        "labels": self.spec.labels, **long_inputs.serving_info(options)}


for _spec in glue.SPECS.values():
    register(GlueTask(_spec))
