"""`SentenceTask`: one task for every GLUE and CLUE row, driven by its spec.

A spec (`glue.GlueSpec`, `clue.ClueSpec`) gives the task's reader (`read`),
labels (None for regression, STS-B), whether it takes a pair, its metrics
(`scores`), primary metric, splits, submission files and data source; the
task adds what they share: featurization (`tasks.long_inputs`), the
`AlbertClassifier` head on the pooled `[CLS]` output, the trivial baseline
beside every evaluation, and the serving module.
"""

import os

import numpy as np

from albert_tf.models import AlbertClassifier
from albert_tf.tasks import declarations, long_inputs, metrics, register
from albert_tf.tasks.base import Task
from albert_tf.tasks.losses import head_loss
from albert_tf.tasks.sentence_prediction import clue, glue


class SentenceTask(Task):
    """A sentence (pair) classification or regression task defined by its spec row."""

    def __init__(self, declared, spec):
        super().__init__(declared)
        self.spec = spec
        self.primary_metric = spec.primary
        self.eval_splits = tuple(spec.eval_splits)
        self.test_splits = tuple(spec.test_splits)
        self.language = "zh" if spec.name in clue.SPECS else "en"

    pipeline_tag = "text-classification"

    @property
    def is_regression(self):
        return self.spec.labels is None

    def read_examples(self, data_dir, split, options=None):
        return self.spec.read(data_dir, split)

    def featurize(self, examples, tokenizer, settings, split):
        labels = None
        if split not in self.test_splits:
            labels = np.array([e.label for e in examples], np.float32) if self.is_regression \
                else np.array([self.spec.labels.index(e.label) for e in examples], np.int32)
        return long_inputs.features(examples, tokenizer, settings.max_seq_length,
                                    self.options(settings), split, labels)

    def build_model(self, backbone, settings, head=None):
        if self.is_regression:
            return AlbertClassifier(backbone, 1, dropout=settings.classifier_dropout)
        return AlbertClassifier(backbone, len(self.spec.labels),
                                dropout=settings.classifier_dropout,
                                head_loss=head_loss(self.options(settings)))

    def predictions(self, outputs):
        """Label ids, or scores, of per-text `outputs` (`{"logits": ...}`)."""
        logits = outputs["logits"]
        return logits[:, 0] if self.is_regression else np.argmax(logits, axis=-1)

    def _predictions(self, split):
        """Per text of a `SplitData` (a text's windows' logits averaged)."""
        return self.predictions(
            {"logits": long_inputs.per_text(split.features, split.outputs["logits"])})

    def evaluate(self, scoring):
        labels = long_inputs.text_labels(scoring.split.features)
        predicted = self._predictions(scoring.split)
        results = self.spec.scores(labels, predicted)
        if self.is_regression:  # beside the mean predictor's
            results["mse"] = float(np.mean((np.asarray(labels, np.float64) - predicted) ** 2))
        results.update(self.baseline(labels))
        results["examples"] = len(labels)
        return results

    def collapse(self, scoring, results):
        """All one label, or (STS-B) one score for every pair."""
        predicted = self._predictions(scoring.split)
        if self.is_regression:
            what = metrics.constant(predicted, long_inputs.text_labels(scoring.split.features))
            return self.collapse_of(scoring.split.name, what, results, "mse")
        found = metrics.one_class(predicted, self.spec.labels)
        return self.collapse_of(scoring.split.name, found and found[0], results,
                                self.primary_metric)

    def baseline(self, labels):
        """The trivial baseline's scores on the split: the mean predictor (STS-B)
        or the split's majority class, every metric of it as `baseline_*`
        (a constant has no correlation: STS-B's is its squared error)."""
        if self.is_regression:
            return {"baseline_mse": metrics.mean_predictor_mse(labels)}
        always = metrics.majority_predictions(labels)
        base = self.spec.scores(labels, always)
        return {"baseline_label": self.spec.labels[int(always[0])],
                **{f"baseline_{k}": v for k, v in base.items()}}

    def write_predictions(self, scoring):
        split = scoring.split
        path = os.path.join(scoring.output_dir, self.spec.submission(split.name))
        self.spec.write_submission(split.name, split.examples, self._predictions(split), path)
        return path

    def model_files(self, settings):
        path = self.spec.label_names_file(settings.data_dir)
        return [path] if path else []

    def serving_module(self, model, tokenizer, settings, model_dir, export_options):
        from albert_tf.export.classification import ClassifierServing

        labels = None if self.is_regression else list(self.spec.labels)
        # The data's own names of its labels (CLUE's labels.json), where it has them:
        # the model folder's copy (`model_files`), else the data folder's.
        names = self.spec.label_names(model_dir) or self.spec.label_names(settings.data_dir)
        options = self.task_options
        module = ClassifierServing(model, tokenizer, settings.max_seq_length,
                                   names or self.spec.labels, self.spec.pair,
                                   window_stride=long_inputs.serving_stride(options))
        inputs = ["text_a", "text_b"] if self.spec.pair else ["text"]
        info = {"inputs": inputs, "labels": list(names) if names else labels,
                **({"label_codes": labels} if names else {}),
                **long_inputs.serving_info(options),
                # The data files' columns, which predict and the server take for the inputs.
                "columns": dict(zip(inputs, self.spec.input_columns))}
        if self.spec.input_format:
            info["input_format"] = self.spec.input_format
        return module, info


for _spec in (*glue.SPECS.values(), *clue.SPECS.values()):
    register(SentenceTask(declarations()[_spec.name], _spec))
