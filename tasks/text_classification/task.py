"""`text_classification` and `text_regression`: fine-tuning on the user's own files.

    python -m albert_tf.finetune --task=text_classification --train_file=train.csv \
        --eval_file=dev.csv --text_column=review --label_column=stars ...

The files (`tasks.user_files`: CSV, TSV or JSON lines) and their rows
(`tasks.text_classification_data`) give one or two texts and a label. The
head is `TextClassifier` on the pooled `[CLS]` output; its label set, read
from the training file in a stable sorted order, is stored in the fine-tuned
model folder (the `head` entry of `albert_tf_config.json`), so an export or a
prediction in another process knows it.

Reports (`eval_results.json`, TensorBoard under `eval_<split>/`, and
`confusion_matrix_<split>.png` in the output folder):
- multi-class: accuracy, macro precision/recall/F1, per-class
  precision/recall/F1/support, the confusion matrix; and the majority
  baseline (always the most frequent training label);
- multi-label: micro and macro F1, the exact-match ratio, per-class scores,
  each label's tp/fp/fn/tn; the threshold, chosen on held-out training rows
  (`heldout_fraction`, by a hash of the row; 0.5 when none are held out) to
  maximise micro-F1; and the baseline of predicting each label more than
  half of the training rows have;
- regression: Pearson, Spearman, MSE; and the MSE of predicting the training mean.

Test predictions (`--do_predict`): `test_predictions.jsonl`, one object a
row of the predict file: `id` (its `id` column, else its line), then
`label` and `probabilities` (label -> probability), or `labels` (multi-label),
or `score` (regression).
"""

import json
import logging
import os

import numpy as np

from albert_tf import extras
from albert_tf.checkpoints import native
from albert_tf.data import Features, new_array
from albert_tf.io_utils import atomic_file, chunks
from albert_tf.training.run_folder import MODEL_DIR
from albert_tf.tasks import declarations, long_inputs, metrics, register, user_files
from albert_tf.tasks.base import Task
from albert_tf.tasks.losses import head_loss
from albert_tf.tasks.text_classification import data, report
from albert_tf.tasks.text_classification.model import TextClassifier
from albert_tf.tasks.text_classification.options import TextOptions

log = logging.getLogger(__name__)

PREDICTIONS_FILE = "test_predictions.jsonl"
HELDOUT_SOURCE = "held-out training rows"
# Examples tokenized at a time: bounds the host's token lists, whatever the file's size.
FEATURIZE_CHUNK = 4096


def _saved_head(folder):
    """The head config of a fine-tuned model folder, or None."""
    if not folder or not native.is_native_dir(folder):
        return None
    return native.read_metadata(folder).get("head")


class TextTask(Task):
    pipeline_tag = "text-classification"
    eval_splits = ("dev",)
    test_splits = ("test",)

    def __init__(self, declared, regression):
        super().__init__(declared)
        self.regression = regression
        # The loss the regression head minimises; the exact choice of multi-class runs.
        self.primary_metric = "mse" if regression else "accuracy"

    def primary_metric_for(self, options):
        return "micro_f1" if self.kind(options) == data.MULTI_LABEL else self.primary_metric

    def kind(self, options):
        if self.regression:
            return data.REGRESSION
        return data.MULTI_LABEL if options.multi_label else data.MULTI_CLASS

    def _checked(self, options):
        """The options, with the combinations that cannot work rejected."""
        options = options or TextOptions()
        if self.regression and (options.multi_label or options.class_weights != "none"):
            raise ValueError(f"task {self.name!r}: --multi_label and --class_weights are for "
                             "text_classification")
        if options.multi_label and options.class_weights != "none":
            raise ValueError("--class_weights=balanced is for single-label classification, "
                             "not with --multi_label")
        if options.multi_label and not options.label_separator and options.train_file and \
                user_files.file_format(options.train_file, options.format) != "jsonl":
            raise ValueError(f"--train_file={options.train_file}: multi-label CSV/TSV needs "
                             "--label_separator (what joins a row's labels, e.g. '|')")
        return options

    # -- Reading -----------------------------------------------------------------

    def training_labels(self, options, data_dir):
        """The training file's `LabelStats`, checked to make a classifier."""
        stats = data.label_stats(options, data_dir, self.kind(options), self.name,
                                 self.run_cache)
        if not stats.rows:
            raise ValueError(f"--train_file={options.train_file}: no rows")
        if options.multi_label and not stats.labels:
            raise ValueError(f"--train_file={options.train_file}: no row has a label")
        if not options.multi_label and len(stats.labels) < 2:
            raise ValueError(f"--train_file={options.train_file}: classification needs at "
                             f"least two labels, the file has {list(stats.labels)}")
        return stats

    def read_examples(self, data_dir, split, options=None):
        """"train", "dev", "test" and (multi-label) "heldout", held out of "train"."""
        options = self._checked(options)
        kind = self.kind(options)
        if split not in ("train", "dev", "test", "heldout"):
            raise ValueError(f"task {self.name!r} has no split {split!r}")
        known = None
        if kind != data.REGRESSION and options.train_file:
            known = self.training_labels(options, data_dir)
        source = "train" if split == "heldout" else split
        fraction = options.heldout_fraction if kind == data.MULTI_LABEL else 0.0

        def examples():
            for example in data.read_split(options, data_dir, source, kind, self.name,
                                           None if source == "train" else known):
                if source != "train" or data.is_heldout(example, fraction) == \
                        (split == "heldout"):
                    yield example
        return data.FileExamples(examples)

    def kfold_files(self, options, data_dir, k, folder):
        """Folds of the training rows: stratified by label for single-label
        classification, by a hash of the row for regression and multi-label."""
        options = self._checked(options)
        user_files.check_kfold_options(options, self.name)
        path = user_files.split_file(options, data_dir, "train", self.name)
        stratum = None
        if self.kind(options) == data.MULTI_CLASS:
            self.training_labels(options, data_dir)  # every row's label read and checked
            column = options.label_column
            stratum = lambda record: str(record.values[column]).strip()  # noqa: E731
        return user_files.write_folds(
            path, k, folder, lambda: user_files.row_records(path, options.format), stratum)

    # -- The model ---------------------------------------------------------------

    def head(self, settings, saved=None):
        """`(labels, class_weights)` of the model: from its `saved` head config
        (a model folder loaded back), else the training file, else a fine-tuned
        folder (the run's `model/`, or its init checkpoint)."""
        options = self._checked(self.options(settings))
        if self.regression:
            return None, None
        if saved and saved.get("labels"):
            return tuple(saved["labels"]), saved.get("class_weights")
        try:
            stats = self.training_labels(options, settings.data_dir)
        except ValueError:
            stats = None
        if stats is not None:
            weights = data.balanced_weights(stats) if options.class_weights == "balanced" \
                else None
            return stats.labels, weights
        for folder in (os.path.join(settings.output_dir, MODEL_DIR), settings.init_checkpoint):
            saved = _saved_head(folder)
            if saved and saved.get("labels"):
                return tuple(saved["labels"]), None
        raise ValueError(f"task {self.name!r}: no label set: give --train_file, or an "
                         "--init_checkpoint fine-tuned on this task")

    def build_model(self, backbone, settings, head=None):
        labels, weights = self.head(settings, head)
        options = self.options(settings)
        return TextClassifier(backbone, labels, multi_label=options.multi_label,
                              class_weights=weights, dropout=settings.classifier_dropout,
                              head_loss=None if self.regression else head_loss(options))

    def featurize(self, examples, tokenizer, settings, split):
        """Features of `examples`, tokenized `FEATURIZE_CHUNK` at a time into arrays
        allocated once with `new_array` (memory-mapped files while the run caches
        them): a streamed file is never held in memory, as text or as ids. With
        `--long_inputs=window` (as many rows as windows, not known before), the
        chunks' windows are joined at the end instead."""
        options = self.options(settings)
        count, length = len(examples), settings.max_seq_length
        labelled = split not in self.test_splits
        windowed = options.long_inputs == "window"
        arrays = {name: new_array((0 if windowed else count, length), np.int32)
                  for name in ("token_ids", "segment_ids")}
        lengths = new_array((0 if windowed else count,), np.int32)
        if labelled:
            empty = self._label_array([], settings, split)
            arrays["label"] = new_array((0 if windowed else count,) + empty.shape[1:],
                                        empty.dtype)
        start, cut, parts = 0, 0, []
        for chunk in chunks(examples, FEATURIZE_CHUNK):
            encoded, chunk_lengths, window_text, chunk_cut = long_inputs.encode(
                chunk, tokenizer, length, options)
            cut += chunk_cut
            if labelled:
                encoded["label"] = long_inputs.labelled_windows(
                    window_text, self._label_array(chunk, settings, split))
            if windowed:
                parts.append((encoded, chunk_lengths, window_text + start))
            else:
                for name, values in encoded.items():
                    arrays[name][start:start + len(chunk)] = values
                lengths[start:start + len(chunk)] = chunk_lengths
            start += len(chunk)
        long_inputs.report_cut(cut, count, split, length, options)
        window_text = None
        if windowed:
            arrays = {name: np.concatenate([arrays[name]] + [p[0][name] for p in parts])
                      for name in arrays}
            lengths = np.concatenate([lengths] + [p[1] for p in parts])
            window_text = np.concatenate([np.zeros(0, np.int32)] + [p[2] for p in parts])
        arrays, host_keys = long_inputs.features_arrays(arrays, window_text)
        return Features(arrays, lengths, label_keys=("label",) if labelled else (),
                        host_keys=host_keys)

    def _label_array(self, examples, settings, split):
        """The label array of some examples: ids, multi-hot rows or scores."""
        kind = self.kind(self.options(settings))
        if kind == data.REGRESSION:
            return np.array([e.label for e in examples], np.float32)
        ids = {label: i for i, label in enumerate(self.head(settings)[0])}
        unknown = next((e for e in examples for label in
                        (e.label if kind == data.MULTI_LABEL else (e.label,))
                        if label not in ids), None)
        if unknown is not None:
            raise ValueError(f"the {split} split, row {unknown.guid}: label {unknown.label!r} "
                             f"is not one the model knows ({', '.join(ids)})")
        if kind == data.MULTI_LABEL:
            hot = np.zeros((len(examples), len(ids)), np.float32)
            for row, example in enumerate(examples):
                hot[row, [ids[label] for label in example.label]] = 1.0
            return hot
        return np.array([ids[e.label] for e in examples], np.int32)

    # -- Evaluation and predictions ------------------------------------------------

    def helper_splits(self):
        """Multi-label: the held-out training rows the threshold is chosen on."""
        return ("heldout",) if self.kind(self.task_options) == data.MULTI_LABEL else ()

    def tune_head(self, helpers, head):
        """Multi-label: the decision threshold that maximises micro-F1 on the held-out
        training rows (0.5 when none are held out), kept in the model's head config
        so that the saved model folder carries it."""
        if "heldout" not in helpers:
            return None
        heldout = helpers["heldout"]
        if not len(heldout.examples):
            return {"threshold": 0.5,
                    "threshold_source": "default 0.5 (no held-out training rows)"}
        targets = long_inputs.text_labels(heldout.features)
        probabilities = report.sigmoid(self.text_logits(heldout))
        threshold, _ = report.best_threshold(targets, probabilities)
        return {"threshold": threshold,
                "threshold_source": f"{HELDOUT_SOURCE} ({len(targets)})"}

    @staticmethod
    def text_logits(split):
        """The model's logits per text of a `SplitData` (a text's windows averaged)."""
        return long_inputs.per_text(split.features, split.outputs["logits"])

    def evaluate(self, scoring):
        options, head = self.task_options, scoring.head
        kind, labels = self.kind(options), long_inputs.text_labels(scoring.split.features)
        logits = self.text_logits(scoring.split)
        if kind == data.REGRESSION:
            results = report.regression(labels, logits[:, 0])
            if options.train_file:
                train = [e.label for e in self.read(self.settings.data_dir, "train", options)]
                results["baseline_mse"] = float(np.mean((labels - np.mean(train)) ** 2))
        elif kind == data.MULTI_LABEL:
            results = report.multi_label(labels > 0.5,
                                         report.sigmoid(logits) >= head["threshold"],
                                         head["labels"])
            results.update(threshold=head["threshold"],
                           threshold_source=head["threshold_source"],
                           **self._baseline(options, labels))
        else:
            results = report.multi_class(labels, np.argmax(logits, -1), head["labels"])
            results.update(self._baseline(options, labels))
        results["examples"] = len(labels)
        self._write_reports(scoring, results)
        return results

    def collapse(self, scoring, results):
        """All one label (multi-label: one label set for every row), or one score."""
        options, head = self.task_options, scoring.head
        kind, labels = self.kind(options), long_inputs.text_labels(scoring.split.features)
        logits, split = self.text_logits(scoring.split), scoring.split.name
        if kind == data.REGRESSION:
            return self.collapse_of(split, metrics.constant(logits[:, 0], labels), results,
                                    "mse")
        if kind == data.MULTI_LABEL:
            chosen = report.sigmoid(logits) >= head["threshold"]
            if len(chosen) and np.all(chosen == chosen[0]):
                names = [n for n, on in zip(head["labels"], chosen[0]) if on]
                return self.collapse_of(split, f"every one of the {len(chosen)} predictions "
                                        f"is the label set {names}", results, "micro_f1")
            return None
        found = metrics.one_class(np.argmax(logits, -1), head["labels"])
        return self.collapse_of(split, found and found[0], results, "accuracy", "macro_f1")

    def _baseline(self, options, labels):
        """The majority baseline's scores, when the training file is at hand."""
        if not options.train_file:
            return {}
        stats = self.training_labels(options, self.settings.data_dir)
        counts = np.array(stats.counts)
        if options.multi_label:
            always = np.broadcast_to(counts > stats.rows / 2, labels.shape)
            base = report.multi_label(labels > 0.5, always, stats.labels)
            return {"baseline_micro_f1": base["micro_f1"],
                    "baseline_exact_match": base["exact_match"]}
        majority = np.full(len(labels), int(np.argmax(counts)))
        base = report.multi_class(labels, majority, stats.labels)
        return {"baseline_label": stats.labels[int(np.argmax(counts))],
                "baseline_accuracy": base["accuracy"], "baseline_macro_f1": base["macro_f1"]}

    def _write_reports(self, scoring, results):
        """The confusion matrix picture of one split (its numbers reach TensorBoard
        with every task's, `albert_tf.training.eval_history.write_evaluation`)."""
        split = scoring.split.name
        if "confusion_matrix" in results and not extras.available("plots"):
            log.warning("confusion_matrix_%s.png not written: the picture needs matplotlib "
                            '(pip install "albert-tf[plots]"); the matrix is in the results',
                            split)
        elif "confusion_matrix" in results:
            path = os.path.join(scoring.output_dir, f"confusion_matrix_{split}.png")
            report.write_confusion_png(results["confusion_matrix"], path,
                                       f"{self.name}: {split} ({results['examples']} rows)")
            results["confusion_matrix_png"] = path

    def write_predictions(self, scoring):
        head, split = scoring.head, scoring.split
        multi = self.kind(self.task_options) == data.MULTI_LABEL
        threshold = head["threshold"] if multi else None
        lines = [json.dumps(report.prediction(example.guid, row, head["labels"], threshold),
                            ensure_ascii=False)
                 for example, row in zip(split.examples, self.text_logits(split))]
        path = os.path.join(scoring.output_dir, PREDICTIONS_FILE)
        with atomic_file(path, "w", encoding="utf-8", newline="\n") as f:
            f.write("".join(line + "\n" for line in lines))
        return path

    # -- Serving ----------------------------------------------------------------

    def serving_module(self, model, tokenizer, settings, model_dir, export_options):
        from albert_tf.export.classification import ClassifierServing, MultiLabelServing

        options = self.task_options
        multi = options.multi_label
        given = export_options.threshold if export_options is not None else None
        if given is not None and not multi:
            raise ValueError(f"task {self.name!r} takes no export option threshold: it is "
                             "the decision threshold of a --multi_label model")
        pair = bool(options.text_pair_column)
        labels = model.labels
        inputs = ["text_a", "text_b"] if pair else ["text"]
        trained = [options.text_column, options.text_pair_column] if pair else \
            [options.text_column]
        info = {"inputs": inputs, "labels": None if labels is None else list(labels),
                "multi_label": multi,
                # The training file's columns, which predict takes for the inputs.
                "columns": {n: c for n, c in zip(inputs, trained) if n != c}}
        stride = long_inputs.serving_stride(options)
        info.update(long_inputs.serving_info(options))
        if not multi:
            return ClassifierServing(model, tokenizer, settings.max_seq_length, labels,
                                     pair, window_stride=stride), info
        threshold = given if given is not None else model.threshold
        info.update(threshold=float(threshold), threshold_source="given" if given is not None
                    else model.threshold_source or "saved")
        return MultiLabelServing(model, tokenizer, settings.max_seq_length, labels, threshold,
                                 pair, window_stride=stride), info


register(TextTask(declarations()["text_classification"], regression=False))
register(TextTask(declarations()["text_regression"], regression=True))
