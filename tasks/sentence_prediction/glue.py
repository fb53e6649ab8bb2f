"""The nine GLUE tasks: one `GlueSpec` row each, their reader, metrics and submissions.

The reader takes the TSV files exactly as GLUE distributes them
(gluebenchmark.com; `download_glue_data.py` for MRPC). Their layouts differ:

- CoLA train/dev have no header and 4 columns (source, label, the original
  "*" mark, sentence); every other file starts with a header row.
- MRPC train/dev keep Microsoft's header, which begins with a UTF-8
  byte-order mark; MRPC test.tsv has a header that GLUE wrote, without one.
- MNLI rows carry ids, genre and parse trees before the two sentences; the
  gold label is the LAST column (train has one annotator label before it,
  dev has five), hence the negative index.
- STS-B's label is a float similarity score in [0, 5].
- Quotes are literal text, often unbalanced, so fields are split on tabs
  with no CSV quoting at all (Python's csv module with its default quoting
  reads 3,570 rows instead of MRPC's 3,668 training pairs).

Label ids follow the order of google-research/albert's `classifier_utils.py`
(e.g. MNLI: contradiction, entailment, neutral), so that heads fine-tuned
there keep their meaning here.
"""

import dataclasses
import math
import operator
import os
import types

from albert_tf.io_utils import atomic_file, numbered_lines
from albert_tf.tasks import metrics
from albert_tf.tasks.base import Example

METRICS = {"accuracy": metrics.accuracy, "f1": metrics.f1_binary,
           "matthews_corr": metrics.matthews_corrcoef, "pearson": metrics.pearson,
           "spearman": metrics.spearman}
SUBMISSION_HEADER = "index\tprediction"
STSB_RANGE = (0.0, 5.0)


@dataclasses.dataclass(frozen=True)
class Columns:
    """Where the fields are in one kind of TSV file (labelled or test).

    columns: every row must have at least this many tab-separated fields.
    text_a, text_b, label, guid: 0-based column indices; a negative index
        counts from the end (MNLI's gold label is always last). `text_b` is
        None for one-sentence tasks, `label` None in test files, `guid` None
        in labelled files (their examples are named "<split>-<line>").
    header: whether the first line is a header row (skipped).
    """

    columns: int
    text_a: int
    text_b: int | None = None
    label: int | None = None
    guid: int | None = None
    header: bool = True

    def __post_init__(self):
        for field in ("text_a", "text_b", "label", "guid"):
            index = getattr(self, field)
            if index is not None and not -self.columns <= index < self.columns:
                raise ValueError(f"Columns.{field}={index} is outside a row of "
                                 f"{self.columns} columns")


_STANDARD_FILES = {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}


@dataclasses.dataclass(frozen=True)
class GlueSpec:
    """One GLUE task: its files, column layouts, labels, metrics and submission.

    name: the registry name (e.g. "sst2"); folder: GLUE's folder ("SST-2").
    labelled / test: the `Columns` of train+dev files and of test files.
    labels: label strings in id order, or None for regression (STS-B).
    metrics: metric names (keys of `METRICS`); primary: the one for model
        selection; positive_label: the class F1 is computed for.
    files: split -> file name in the folder; eval_splits: the dev split(s)
        to report; test_splits: split -> submission file name.
    input_columns: the header's names of the text_a (and text_b) columns, which
        a served or predicting model takes for its inputs (none: no header).
    """

    name: str
    folder: str
    labelled: Columns
    test: Columns
    labels: tuple | None
    metrics: tuple
    primary: str
    test_splits: dict
    eval_splits: tuple = ("dev",)
    files: dict = dataclasses.field(default_factory=lambda: dict(_STANDARD_FILES))
    positive_label: str | None = None
    input_columns: tuple = ()

    def __post_init__(self):
        # Read-only views: a spec is a constant shared by every caller.
        object.__setattr__(self, "files", types.MappingProxyType(dict(self.files)))
        object.__setattr__(self, "test_splits",
                           types.MappingProxyType(dict(self.test_splits)))
        _validate_spec(self)

    # What `task.SentenceTask` reads of a spec (`clue.ClueSpec` has the same).
    @property
    def pair(self):
        return self.labelled.text_b is not None

    input_format = ""

    def label_names(self, data_dir):
        """GLUE's labels are their own names (CLUE's may be described apart)."""
        return None

    def label_names_file(self, data_dir):
        return None

    def read(self, data_dir, split):
        return read_examples(self, data_dir, split)

    def scores(self, labels, predictions):
        return compute_metrics(self, labels, predictions)

    def submission(self, split):
        return submission_name(self, split)

    def write_submission(self, split, examples, predictions, path):
        write_submission(self, split, examples, predictions, path)


def _validate_spec(spec):
    """Rejects a row whose fields contradict each other, naming the field."""
    def fail(field, message):
        raise ValueError(f"GlueSpec {spec.name!r}: {field}: {message}")

    for split in ("train", *spec.eval_splits, *spec.test_splits):
        if split not in spec.files:
            fail("files", f"no file for split {split!r}")
    unknown = sorted(set(spec.metrics) - set(METRICS))
    if unknown:
        fail("metrics", f"unknown {unknown}; known: {sorted(METRICS)}")
    if spec.primary not in spec.metrics:
        fail("primary", f"{spec.primary!r} is not one of metrics {spec.metrics}")
    if spec.labelled.label is None or spec.labelled.guid is not None:
        fail("labelled", "labelled files need a label column and no guid column")
    if spec.test.guid is None or spec.test.label is not None:
        fail("test", "test files need a guid column and no label column")
    if ("f1" in spec.metrics) != (spec.positive_label is not None):
        fail("positive_label", "is needed exactly when metrics include 'f1'")
    if spec.positive_label is not None and spec.positive_label not in (spec.labels or ()):
        fail("positive_label", f"{spec.positive_label!r} is not in labels {spec.labels}")
    if spec.labels is None and not set(spec.metrics) <= {"pearson", "spearman"}:
        fail("metrics", "a regression task (labels=None) takes correlations only")


_SENTENCE_PAIR = dict(labelled=Columns(4, text_a=1, text_b=2, label=3),
                      test=Columns(3, guid=0, text_a=1, text_b=2))
_BINARY = ("0", "1")
_NLI_2WAY = ("entailment", "not_entailment")

# `primary` is what google-research/albert evaluates and the ALBERT paper reports on
# dev: accuracy (MRPC and QQP included), MCC for CoLA, Pearson for STS-B.
SPECS = {spec.name: spec for spec in (
    GlueSpec("cola", "CoLA",
             labelled=Columns(4, text_a=3, label=1, header=False),
             test=Columns(2, guid=0, text_a=1),
             labels=_BINARY, metrics=("matthews_corr",), primary="matthews_corr",
             test_splits={"test": "CoLA.tsv"}),
    GlueSpec("sst2", "SST-2",
             labelled=Columns(2, text_a=0, label=1),
             test=Columns(2, guid=0, text_a=1),
             labels=_BINARY, metrics=("accuracy",), primary="accuracy",
             test_splits={"test": "SST-2.tsv"},
             input_columns=("sentence",)),
    GlueSpec("mrpc", "MRPC",
             labelled=Columns(5, text_a=3, text_b=4, label=0),
             test=Columns(5, guid=0, text_a=3, text_b=4),
             labels=_BINARY, metrics=("accuracy", "f1"), primary="accuracy",
             positive_label="1", test_splits={"test": "MRPC.tsv"},
             input_columns=("#1 String", "#2 String")),
    GlueSpec("stsb", "STS-B",
             labelled=Columns(10, text_a=7, text_b=8, label=9),
             test=Columns(9, guid=0, text_a=7, text_b=8),
             labels=None, metrics=("pearson", "spearman"), primary="pearson",
             test_splits={"test": "STS-B.tsv"},
             input_columns=("sentence1", "sentence2")),
    GlueSpec("qqp", "QQP",
             labelled=Columns(6, text_a=3, text_b=4, label=5),
             test=Columns(3, guid=0, text_a=1, text_b=2),
             labels=_BINARY, metrics=("accuracy", "f1"), primary="accuracy",
             positive_label="1", test_splits={"test": "QQP.tsv"},
             input_columns=("question1", "question2")),
    GlueSpec("mnli", "MNLI",
             # Ten fields, then label1 (train) or label1..label5 (dev), gold_label last.
             labelled=Columns(11, text_a=8, text_b=9, label=-1),
             test=Columns(10, guid=0, text_a=8, text_b=9),
             labels=("contradiction", "entailment", "neutral"),
             metrics=("accuracy",), primary="accuracy",
             eval_splits=("dev_matched", "dev_mismatched"),
             test_splits={"test_matched": "MNLI-m.tsv", "test_mismatched": "MNLI-mm.tsv"},
             files={split: f"{split}.tsv" for split in (
                 "train", "dev_matched", "dev_mismatched", "test_matched", "test_mismatched")},
             input_columns=("sentence1", "sentence2")),
    GlueSpec("qnli", "QNLI", **_SENTENCE_PAIR, labels=_NLI_2WAY,
             metrics=("accuracy",), primary="accuracy", test_splits={"test": "QNLI.tsv"},
             input_columns=("question", "sentence")),
    GlueSpec("rte", "RTE", **_SENTENCE_PAIR, labels=_NLI_2WAY,
             metrics=("accuracy",), primary="accuracy", test_splits={"test": "RTE.tsv"},
             input_columns=("sentence1", "sentence2")),
    GlueSpec("wnli", "WNLI", **_SENTENCE_PAIR, labels=_BINARY,
             metrics=("accuracy",), primary="accuracy", test_splits={"test": "WNLI.tsv"},
             input_columns=("sentence1", "sentence2")),
)}


def get_spec(name):
    """The `GlueSpec` called `name`; an unknown name lists the known ones."""
    if name not in SPECS:
        raise ValueError(f"unknown GLUE task {name!r}; known: {', '.join(sorted(SPECS))}")
    return SPECS[name]


def read_examples(spec, data_dir, split):
    """The `Example`s of one split, read from GLUE's original TSV file.

    data_dir: the task's folder (e.g. .../glue/MNLI). Labelled splits give
    guid "<split>-<line>" (1-based line in the file) and the label as
    written ("entailment", "1") or a float for STS-B; test splits give the
    id column as guid (the submission's index) and label None.
    Raises FileNotFoundError naming the path and split, or ValueError naming
    the file, line and what was expected.
    """
    if split not in spec.files:
        raise ValueError(f"{spec.name} has no split {split!r}; splits: {', '.join(spec.files)}")
    path = os.path.join(data_dir, spec.files[split])
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{spec.name} split {split!r}: no file {path}")
    is_test = split in spec.test_splits
    layout = spec.test if is_test else spec.labelled
    examples = []
    for line_no, fields in _read_rows(path, layout):
        where = f"{path}:{line_no}"
        text_b = None if layout.text_b is None else fields[layout.text_b]
        if is_test:
            guid, label = fields[layout.guid], None
            if not guid:
                raise ValueError(f"{where}: empty id in column {layout.guid + 1}")
        else:
            guid, label = f"{split}-{line_no}", _parse_label(spec, fields[layout.label], where)
        examples.append(Example(guid=guid, text_a=fields[layout.text_a], text_b=text_b,
                                label=label))
    return examples


def _read_rows(path, layout):
    """Yields (1-based line number, tab-separated fields) of each data row."""
    # MRPC's byte-order mark is dropped; a stray "\r" or U+2028 inside a
    # sentence does not start a new row (numbered_lines splits on "\n" only).
    for line_no, line in numbered_lines(path):
        # "\r" too: a file re-saved with Windows line ends reads the same.
        fields = line.removesuffix("\n").removesuffix("\r").split("\t")
        if len(fields) < layout.columns:
            raise ValueError(f"{path}:{line_no}: expected at least {layout.columns} "
                             f"tab-separated columns, got {len(fields)}")
        if line_no == 1 and layout.header:
            continue
        yield line_no, fields


def _parse_label(spec, text, where):
    """The label as written, checked against the task's labels (a float for STS-B)."""
    if spec.labels is not None:
        if text not in spec.labels:
            raise ValueError(f"{where}: unknown label {text!r}; allowed: "
                             f"{', '.join(spec.labels)}")
        return text
    try:
        score = float(text)
        if math.isfinite(score):
            return score
    except ValueError:
        pass
    raise ValueError(f"{where}: expected a finite float score, got {text!r}")


def label_id(spec, label):
    """The id (index in `spec.labels`) of the label string `label`."""
    _require_classification(spec)
    if label not in spec.labels:
        raise ValueError(f"{spec.name}: unknown label {label!r}; allowed: "
                         f"{', '.join(spec.labels)}")
    return spec.labels.index(label)


def label_name(spec, label_id):
    """The label string of id `label_id` (the inverse of `label_id`)."""
    _require_classification(spec)
    try:
        index = operator.index(label_id)
    except TypeError:
        raise ValueError(f"{spec.name}: label id {label_id!r} is not an integer") from None
    if not 0 <= index < len(spec.labels):
        raise ValueError(f"{spec.name}: label id {index} is outside "
                         f"[0, {len(spec.labels) - 1}]")
    return spec.labels[index]


def _require_classification(spec):
    if spec.labels is None:
        raise ValueError(f"{spec.name} is a regression task; it has no label ids")


def primary_metric(spec):
    """The name of the metric that selects the best checkpoint."""
    return spec.primary


def compute_metrics(spec, labels, predictions):
    """{metric name: value} of the task's metrics.

    labels, predictions: label ids (ints) for classification, floats for
    STS-B, one per example in the same order.
    """
    if spec.labels is not None:
        for values in (labels, predictions):
            for value in values:
                label_name(spec, value)  # rejects strings, floats and bad ids
    results = {}
    for name in spec.metrics:
        if name == "f1":
            positive = label_id(spec, spec.positive_label)
            results[name] = metrics.f1_binary(labels, predictions, positive=positive)
        else:
            results[name] = METRICS[name](labels, predictions)
    return results


def write_submission(spec, split, examples, predictions, path):
    """Writes GLUE's submission TSV for a test split, atomically.

    examples: the split's `Example`s (their guid is the index column);
    predictions: one label id per example, or a float for STS-B (clipped to
    [0, 5], the range of the gold scores). Textual labels are written as
    strings ("not_entailment"), the binary tasks as 0/1.
    """
    submission_name(spec, split)  # rejects a split that is not a test split
    if len(examples) != len(predictions):
        raise ValueError(f"{spec.name} {split}: {len(examples)} examples but "
                         f"{len(predictions)} predictions")
    rows = [SUBMISSION_HEADER]
    for i, (example, prediction) in enumerate(zip(examples, predictions)):
        rows.append(f"{example.guid}\t{_format_prediction(spec, prediction, i)}")
    with atomic_file(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(rows) + "\n")


def _format_prediction(spec, prediction, i):
    """One prediction as the submission writes it; `i` names it in errors."""
    if spec.labels is not None:
        try:
            return label_name(spec, prediction)
        except ValueError as e:
            raise ValueError(f"prediction {i}: {e}") from None
    value = float(prediction)
    if not math.isfinite(value):
        raise ValueError(f"{spec.name}: prediction {i} is {value}, not a finite score")
    return f"{min(max(value, STSB_RANGE[0]), STSB_RANGE[1]):.3f}"


def submission_name(spec, split):
    """GLUE's file name for the predictions of a test split (e.g. "MNLI-m.tsv")."""
    if split not in spec.test_splits:
        raise ValueError(f"{spec.name}: {split!r} is not a test split; test splits: "
                         f"{', '.join(spec.test_splits)}")
    return spec.test_splits[split]
