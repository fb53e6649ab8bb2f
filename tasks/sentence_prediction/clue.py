"""The CLUE classification tasks: one `ClueSpec` row each, their reader, task and submissions.

The reader takes CLUE's JSON-lines files as CLUE distributes them
(`train.json`, `dev.json`, `test.json` in `--data_dir`, one object a line)
and builds each input as CLUE's own baselines do
(CLUEbenchmark/CLUE `baselines/models/classifier_utils.py`; OCNLI, which
came later: `baselines/models_pytorch/classifier_pytorch/processors/clue.py`):

- afqmc: sentence1, sentence2; labels "0", "1".
- tnews: sentence; labels "100".."116" without "105" and "111" (15 classes).
- iflytek: sentence; labels "0".."118".
- cmnli, ocnli: sentence1, sentence2; contradiction, entailment, neutral.
  Rows labelled "-" (no majority among the annotators) are skipped.
- cluewsc2020: `text`, with the candidate noun (`target.span1_*`) marked
  "_noun_" and the pronoun (`target.span2_*`) "[pronoun]" at their character
  indices; labels "true", "false".
- csl: the keywords joined by spaces, then the abstract; labels "0", "1".

Label ids follow the baselines' label lists, so that a head fine-tuned there
keeps its meaning. A label may be written as a string or as an integer (some
releases of TNEWS and IFLYTEK do). The metric is accuracy. Test predictions
are CLUE's submission files: `{task}_predict.json`, one `{"id", "label"}`
object a line, the id being the row's position in `test.json` (from 0), as
the baselines write them.
"""

import dataclasses
import json
import os
import typing

from albert_tf.io_utils import atomic_file, json_field, json_kind, json_objects, numbered_lines
from albert_tf.tasks import metrics
from albert_tf.tasks.base import Example

NLI_LABELS = ("contradiction", "entailment", "neutral")
SPLITS = ("train", "dev", "test")


@dataclasses.dataclass(frozen=True)
class ClueSpec:
    """One CLUE classification task.

    name: the registry name (e.g. "ocnli"); labels: label strings in id order.
    inputs: `(row, where) -> (text_a, text_b)` for one JSON object (`text_b`
        None for one-text tasks); `where` ("file:line") prefixes its errors.
    pair: whether the task takes two texts (`text_b` is never None).
    skip_label: rows of labelled splits with this label are left out.
    input_format: how a raw input is built, for the serving description.
    """

    name: str
    labels: tuple
    inputs: typing.Callable
    pair: bool
    skip_label: str | None = None
    input_format: str = ""

    def label_names(self, data_dir):
        """The labels' readable names from `data_dir/labels.json`, or None."""
        return label_names(self, data_dir)

    def label_names_file(self, data_dir):
        """`data_dir/labels.json` where there is one, else None."""
        path = os.path.join(data_dir or "", LABELS_FILE)
        return path if data_dir and os.path.isfile(path) else None

    @property
    def input_columns(self):
        """The fields text_a (and text_b) are read from, where each is one field."""
        return getattr(self.inputs, "columns", ())

    # What `task.SentenceTask` reads of a spec (`glue.GlueSpec` has the same).
    primary = "accuracy"
    eval_splits = ("dev",)
    test_splits = ("test",)

    def read(self, data_dir, split):
        return read_examples(self, data_dir, split)

    def scores(self, labels, predictions):
        return {"accuracy": metrics.accuracy(labels, predictions)}

    def submission(self, split):
        return f"{self.name}_predict.json"

    def write_submission(self, split, examples, predictions, path):
        write_submission(self, examples, predictions, path)


# -- Fields ---------------------------------------------------------------------

def _texts(name_a, name_b=None):
    def inputs(row, where):
        return (json_field(row, name_a, str, where),
                None if name_b is None else json_field(row, name_b, str, where))
    inputs.columns = (name_a,) if name_b is None else (name_a, name_b)
    return inputs


def _csl_inputs(row, where):
    """The keywords joined by spaces, and the abstract (CLUE's `CslProcessor`)."""
    keywords = json_field(row, "keyword", list, where)
    for i, keyword in enumerate(keywords):
        if not isinstance(keyword, str):
            raise ValueError(f"{where}: field 'keyword[{i}]': expected a string, got "
                             f"{json_kind(keyword)}")
    return " ".join(keywords), json_field(row, "abst", str, where)


def _span(row, text, number, where):
    """`(start, end)` of `target.span{number}` in `text`, checked against its text."""
    start = json_field(row, f"target.span{number}_index", int, where)
    span = json_field(row, f"target.span{number}_text", str, where)
    if not span or text[start:start + len(span)] != span or start < 0:
        raise ValueError(f"{where}: field 'target.span{number}_text': {span!r} is not at "
                         f"character {start} of 'text' ({text[max(start, 0):][:len(span)]!r})")
    return start, start + len(span)


def _wsc_inputs(row, where):
    """`text` with the noun marked `_noun_` and the pronoun `[pronoun]` (CLUE's
    `WSCProcessor`, which inserts the marks at the spans' indices)."""
    text = json_field(row, "text", str, where)
    noun, pronoun = _span(row, text, 1, where), _span(row, text, 2, where)
    if noun[0] < pronoun[1] and pronoun[0] < noun[1]:
        raise ValueError(f"{where}: field 'target': span1 {noun} and span2 {pronoun} overlap")
    marks = sorted([(noun[0], "_"), (noun[1], "_"), (pronoun[0], "["), (pronoun[1], "]")],
                   key=lambda mark: mark[0])
    pieces, last = [], 0
    for at, mark in marks:
        pieces += [text[last:at], mark]
        last = at
    return "".join(pieces + [text[last:]]), None


SPECS = {spec.name: spec for spec in (
    ClueSpec("afqmc", ("0", "1"), _texts("sentence1", "sentence2"), pair=True),
    ClueSpec("tnews", tuple(str(100 + i) for i in range(17) if i not in (5, 11)),
             _texts("sentence"), pair=False),
    ClueSpec("iflytek", tuple(str(i) for i in range(119)), _texts("sentence"), pair=False),
    ClueSpec("cmnli", NLI_LABELS, _texts("sentence1", "sentence2"), pair=True,
             skip_label="-"),
    ClueSpec("ocnli", NLI_LABELS, _texts("sentence1", "sentence2"), pair=True,
             skip_label="-"),
    ClueSpec("cluewsc2020", ("true", "false"), _wsc_inputs, pair=False,
             input_format="the text with the noun marked _noun_ and the pronoun [pronoun]"),
    ClueSpec("csl", ("0", "1"), _csl_inputs, pair=True,
             input_format="text_a: the keywords joined by spaces; text_b: the abstract"),
)}


# -- Reading --------------------------------------------------------------------

# CLUE's description of a task's labels, beside its data (TNEWS, IFLYTEK): one
# `{"label": "110", "label_desc": "news_military"}` a line.
LABELS_FILE = "labels.json"


def label_names(spec, data_dir):
    """The readable name of each of `spec.labels` (in id order) from
    `data_dir/labels.json`'s `label_desc`, a label it does not describe keeping
    its code; None without the file (or `data_dir`)."""
    path = spec.label_names_file(data_dir)
    if path is None:
        return None
    described = {}
    for _, row in read_rows(path):
        label, name = row.get("label"), row.get("label_desc")
        if isinstance(label, int) and not isinstance(label, bool):
            label = str(label)
        if isinstance(label, str) and isinstance(name, str) and name:
            described[label] = name
    names = tuple(described.get(label, label) for label in spec.labels)
    return names if names != tuple(spec.labels) else None


def read_rows(path):
    """Yields `(line number, object)` of a JSON-lines file; blank lines are skipped."""
    return json_objects(numbered_lines(path), path)


def _label(spec, row, where):
    """The row's label as a string ("-" included); integers are read as their digits."""
    value = row.get("label")
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        json_field(row, "label", str, where)  # raises: missing, or not a string
    if value != spec.skip_label and value not in spec.labels:
        shown = ", ".join(spec.labels) if len(spec.labels) <= 20 else \
            f"{', '.join(spec.labels[:5])}, ..., {spec.labels[-1]} ({len(spec.labels)} labels)"
        raise ValueError(f"{where}: field 'label': unknown label {value!r}; allowed: {shown}")
    return value


def read_examples(spec, data_dir, split):
    """The `tasks.base.Example`s of one split, read from CLUE's `{split}.json`.

    Labelled splits give guid "<split>-<line>" (1-based line in the file)
    and the label string, and leave out rows labelled `spec.skip_label`;
    "test" gives guid "<position>" (the row's place among the file's rows,
    from 0: the submission's id) and label None.
    Raises FileNotFoundError naming the path and split, or ValueError naming
    the file, line and field at fault.
    """
    if split not in SPLITS:
        raise ValueError(f"{spec.name} has no split {split!r}; splits: {', '.join(SPLITS)}")
    path = os.path.join(data_dir, f"{split}.json")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{spec.name} split {split!r}: no file {path}")
    examples = []
    for position, (line_no, row) in enumerate(read_rows(path)):
        where = f"{path}:{line_no}"
        text_a, text_b = spec.inputs(row, where)
        if split == "test":
            examples.append(Example(guid=str(position), text_a=text_a, text_b=text_b))
            continue
        label = _label(spec, row, where)
        if label != spec.skip_label:
            examples.append(Example(guid=f"{split}-{line_no}", text_a=text_a, text_b=text_b,
                                    label=label))
    return examples


def write_submission(spec, examples, label_ids, path):
    """Writes CLUE's `{task}_predict.json` for the test examples, atomically.

    label_ids: one predicted label id per example, in example order.
    """
    if len(examples) != len(label_ids):
        raise ValueError(f"{spec.name}: {len(examples)} examples but {len(label_ids)} "
                         "predictions")
    lines = []
    for example, label_id in zip(examples, label_ids):
        index = int(label_id)
        if not 0 <= index < len(spec.labels):
            raise ValueError(f"{spec.name}: label id {index} is outside "
                             f"[0, {len(spec.labels) - 1}]")
        lines.append(json.dumps({"id": int(example.guid), "label": spec.labels[index]},
                                ensure_ascii=False))
    with atomic_file(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(line + "\n" for line in lines))
