"""A fine-tuned task's data for an export: the split its variants are scored on
(`python -m albert_tf.export --eval_data`), and the int8 variant's calibration
examples.
"""

import os
import tempfile

from albert_tf.export import comparison
from albert_tf.tasks.base import Scoring, SplitData


class TaskData:
    """The fine-tuned task's examples that `--eval_data` names: the split
    scored, and the int8 variant's calibration examples.

    Scoring goes through the task's own `evaluate`, handed the split as a
    fine-tuning run hands it (`tasks.base.Scoring`), with the outputs of one
    variant at a time.
    """

    def __init__(self, folder, data_dir, split=None, max_examples=None, calibration=False,
                 calibration_split=None, calibration_examples=128):
        """folder: the fine-tuned model folder (`tasks.finetuned.Finetuned`)."""
        self.folder, self.task, self.settings = folder, folder.task, folder.settings
        self.tokenizer = folder.tokenizer(host=True)
        self.data_dir = data_dir
        self.split = split or self.task.eval_splits[0]
        if self.split not in self.task.eval_splits:
            raise ValueError(f"--eval_split: {self.split!r} is not a labelled split of task "
                             f"{self.task.name!r}; choose from {', '.join(self.task.eval_splits)}")
        self._examples = self._read(self.split)[:max_examples]
        self._features = self.task.featurize(self._examples, self.tokenizer, self.settings,
                                             self.split)
        self._calibration_examples = None
        if calibration:
            split = calibration_split or self.task.train_split
            examples = self._read(split)
            rows = comparison.sample_indices(len(examples), calibration_examples)
            self._calibration_examples = (split, [examples[i] for i in rows])

    def _read(self, split):
        examples = self.task.read(self.data_dir, split, self.task.task_options)
        if not examples:
            raise ValueError(f"--eval_data: the {split} split of task {self.task.name!r} in "
                             f"{self.data_dir} has no examples")
        return examples

    def calibration(self, names):
        """The int8 calibration inputs, or None."""
        if self._calibration_examples is None:
            return None
        split, examples = self._calibration_examples
        features = self.task.featurize(examples, self.tokenizer, self.settings, split)
        return comparison.encoded_inputs(features, names)

    def evaluate(self, names):
        """The exporter's `evaluate`: every variant of the written folder (its
        runners) and the float model, scored on the same inputs."""
        inputs = comparison.encoded_inputs(self._features, names)

        def evaluate(runners):
            self.model = self.folder.model()
            runners = {"float32": keras_runner(self.model), **runners}  # the reference: first
            return {"data_dir": os.path.abspath(self.data_dir), "split": self.split,
                    "examples": len(self._examples), "reference": "float32",
                    "variants": comparison.measure_variants(runners, inputs, self._score)}

        return evaluate

    def _score(self, outputs):
        """The task's metrics of one variant's `outputs` on the scored split. Its
        helper splits (a threshold's held-out rows) are the scored split itself:
        the export reads that one alone."""
        data = SplitData(self.split, self._examples, self._features, outputs)
        with tempfile.TemporaryDirectory() as tmp:  # prediction files some tasks write
            metrics = self.task.evaluate(Scoring(
                data, {name: data for name in self.task.helper_splits()},
                self.model.head_config(), tmp, self.tokenizer,
                getattr(self.model, "decode", None)))
        return {k: v.item() if hasattr(v, "item") else v for k, v in metrics.items()}


def keras_runner(model):
    """The fine-tuned float32 Keras model as a numpy runner (one traced function)."""
    import tensorflow as tf

    predict = tf.function(lambda inputs: model(inputs, training=False), reduce_retracing=True)
    return lambda inputs: {k: v.numpy() for k, v in predict(
        {k: tf.constant(v) for k, v in inputs.items()}).items()}
