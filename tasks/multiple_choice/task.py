"""Multiple choice: the shared scorer (RACE, C3, your own files) and `--task=multiple_choice`.

Every multiple-choice task reads one `ChoiceExample` per question and scores
each of its choices on its own sequence, as google-research/albert's
`run_race.py` (`race_utils.convert_single_example`) builds them:

    [CLS] context [SEP] question choice [SEP]

(segment 0 up to the first `[SEP]`, 1 after it). The question and the
choice are joined by a space; with `fill_blank` (RACE) a question holding
"_" has every "_" replaced by the choice instead. The question-choice text
keeps its last `max_qa_length` tokens, and the context is truncated to what
is left, so the context is what gives way. A question may have any number
of choices (`AlbertMultipleChoice` masks the padded slots); its label is the
index of the right one.

`--task=multiple_choice` reads your own JSON-lines files (`--train_file`,
`--eval_file`, `--predict_file`), one question a line:

    {"context": "...", "question": "...", "choices": ["...", "..."], "label": 1}

`label` is the index of the right choice (from 0) or its text; it is
required in the training and evaluation files and not read in the
prediction file. An `id` (string or integer) is copied to the predictions.
"""

import dataclasses
import json
import os

import numpy as np

from albert_tf.data import Features
from albert_tf.io_utils import atomic_file, json_field
from albert_tf.models import AlbertMultipleChoice
from albert_tf.tasks import declarations, metrics, register, user_files
from albert_tf.tasks.base import Task
from albert_tf.tasks.losses import head_loss
from albert_tf.tasks.multiple_choice.options import MultipleChoiceOptions


@dataclasses.dataclass(frozen=True)
class ChoiceExample:
    """One question and its choices.

    guid: a stable id (copied to the predictions).
    label: the index of the right choice, or None (unlabelled).
    group: a subset the metrics are also given for (RACE: "middle", "high"), or "".
    """

    guid: str
    context: str
    question: str
    choices: tuple
    label: int | None = None
    group: str = ""


# -- Encoding --------------------------------------------------------------------

# Questions per eager call of the serving graph's question-choice text rule,
# and (question, choice) rows per call of its packer: packing 20,000 C3 rows
# of 512 tokens in one call took 0.62-0.72 s of CPU, in calls of 4,096 rows
# 0.72-0.93 s (a shared 2-core machine).
BATCH_QUESTIONS = 4096
BATCH_ROWS = 16384


def qa_texts(examples, fill_blank=False):
    """The second segment of every choice, a list per example: the serving
    graph's `qa_texts` (a space between the question and the choice, or with
    `fill_blank` the question's "_" filled with it) run eagerly on batches."""
    import tensorflow as tf

    from albert_tf.steps.choices import qa_texts as graph_qa_texts

    def utf8(text):
        return text.encode("utf-8", "surrogatepass")  # decoded back below, unchanged

    out = []
    for b in range(0, len(examples), BATCH_QUESTIONS):
        batch = examples[b:b + BATCH_QUESTIONS]
        width = max(len(e.choices) for e in batch)
        choices = [[utf8(c) for c in e.choices] + [b""] * (width - len(e.choices))
                   for e in batch]
        texts = graph_qa_texts(tf.constant([utf8(e.question) for e in batch]),
                               tf.constant(choices, tf.string, [len(batch), width]),
                               fill_blank).numpy()
        out.extend([t.decode("utf-8", "surrogatepass") for t in row[:len(e.choices)]]
                   for row, e in zip(texts, batch))
    return out


def encode_distinct(tokenizer, texts):
    """`tokenizer.encode_batch(texts)`, tokenizing each distinct text once."""
    distinct = {}
    index = [distinct.setdefault(t, len(distinct)) for t in texts]
    ids = tokenizer.encode_batch(list(distinct))
    return [ids[i] for i in index]


def choice_rows(counts):
    """`(C, real)` of questions of `counts[i]` choices: C their most choices, and
    `real` bool `(N * C,)`, which rows are choices (row i * C + j is choice j of
    question i; the others are padded slots)."""
    counts = np.asarray(counts, np.int64).reshape(-1)
    num_choices = int(counts.max(initial=0))
    slot = np.arange(len(counts) * num_choices) % max(num_choices, 1)
    return num_choices, slot < np.repeat(counts, num_choices)


def pack_choices(pack, inputs, counts, max_seq_length, pad_id):
    """The arrays of questions of `counts[i]` choices each, padded to their most
    choices C: `pack` (a step's packer) run eagerly over batches of their
    (question, choice) rows.

    pack: `pack(*batch)` -> the packer's dict (`token_ids`, `segment_ids`,
        `padding_mask`) of a batch of rows of `inputs`.
    inputs: tensors of N * C rows each, ordered as `choice_rows` says.

    Returns `(arrays, lengths)`: `token_ids`, `segment_ids` int32
    `(N, C, max_seq_length)`, `choice_lengths` int32 `(N, C)` (0 at padded
    choice slots, whose ids are padding), and `lengths` `(N,)` the longest
    sequence of each question.
    """
    import tensorflow as tf

    from albert_tf.data.mapped import map_rows

    num_choices, real = choice_rows(counts)

    def packed(*batch):
        out = pack(*batch)
        return dict(out, length=tf.reduce_sum(out["padding_mask"], axis=1))

    arrays = map_rows(packed, inputs, ("token_ids", "segment_ids", "length"), BATCH_ROWS)
    arrays["token_ids"][~real] = pad_id
    arrays["segment_ids"][~real] = 0
    arrays["length"][~real] = 0
    shape = (len(counts), num_choices)
    arrays = {"token_ids": arrays["token_ids"].reshape(*shape, max_seq_length),
              "segment_ids": arrays["segment_ids"].reshape(*shape, max_seq_length),
              "choice_lengths": arrays["length"].reshape(shape)}
    return arrays, arrays["choice_lengths"].max(axis=1, initial=0).astype(np.int32)


def encode_choices(examples, tokenizer, max_seq_length, max_qa_length, fill_blank=False):
    """Arrays of `examples`, padded to their largest number of choices C: the
    serving graph's `ChoicePacker` run eagerly over batches of the
    (question, choice) rows (`pack_choices`, which says what it returns).
    """
    import tensorflow as tf

    from albert_tf.data.mapped import ragged_rows
    from albert_tf.steps.choices import ChoicePacker

    if max_seq_length < 3:
        raise ValueError(f"max_seq_length must be >= 3 ([CLS] context [SEP] question choice "
                         f"[SEP]), got {max_seq_length}")
    counts = [len(e.choices) for e in examples]
    num_choices, real = choice_rows(counts)
    # As the serving graph, the context's first max_seq_length ids before a row
    # per choice is made (the packer keeps fewer still).
    # One context row per question; tokenizing each distinct text once (a C3
    # or RACE passage has several questions) is what most offsets the eager packing.
    contexts = ragged_rows([ids[:max_seq_length] for ids in
                            encode_distinct(tokenizer, [e.context for e in examples])])
    texts = [t for row in qa_texts(examples, fill_blank) for t in row]
    qa_ids = iter(encode_distinct(tokenizer, texts))
    qa = ragged_rows([next(qa_ids) if r else [] for r in real])
    packer = ChoicePacker(max_seq_length, max_qa_length, tokenizer.cls_id, tokenizer.sep_id,
                          tokenizer.pad_id)
    rows = tf.gather(contexts, np.repeat(np.arange(len(examples)), num_choices))
    return pack_choices(packer, (rows, qa), counts, max_seq_length, tokenizer.pad_id)


# -- The shared task -------------------------------------------------------------

class MultipleChoiceTask(Task):
    """What every multiple-choice task shares: featurization, head, metrics,
    prediction files and serving. Subclasses read their examples."""
    pipeline_tag = "multiple-choice"

    fill_blank = False
    primary_metric = "accuracy"

    def featurize(self, examples, tokenizer, settings, split):
        arrays, lengths = encode_choices(examples, tokenizer, settings.max_seq_length,
                                         self.options(settings).max_qa_length, self.fill_blank)
        return choice_features(arrays, lengths, examples)

    def build_model(self, backbone, settings, head=None):
        return AlbertMultipleChoice(backbone, dropout=settings.classifier_dropout,
                                    head_loss=head_loss(self.options(settings)))

    def evaluate(self, scoring):
        """Accuracy (and per group, e.g. RACE's middle and high), beside chance."""
        split = scoring.split
        unlabelled = [e.guid for e in split.examples if e.label is None]
        if unlabelled:
            raise ValueError(f"task {self.name!r}: the {split.name} split has questions "
                             f"without an answer (first: {unlabelled[0]}); it cannot be scored")
        predicted = np.argmax(split.outputs["logits"], axis=-1)
        return choice_metrics(split.examples, predicted)

    def collapse(self, scoring, results):
        """The same answer position for every question."""
        predicted = np.argmax(scoring.split.outputs["logits"], axis=-1)
        found = metrics.one_class([f"choice {int(p)}" for p in predicted])
        return self.collapse_of(scoring.split.name, found and found[0], results, "accuracy")

    def write_predictions(self, scoring):
        split = scoring.split
        path = os.path.join(scoring.output_dir, f"{self.name}_{split.name}_predictions.jsonl")
        write_choice_predictions(split.examples, split.outputs["logits"], path)
        return path

    def serving_module(self, model, tokenizer, settings, model_dir, export_options):
        from albert_tf.export.multiple_choice import MultipleChoiceServing

        max_qa_length = self.task_options.max_qa_length
        module = MultipleChoiceServing(model, tokenizer, settings.max_seq_length,
                                       max_qa_length, self.fill_blank)
        return module, {"inputs": ["context", "question", "choices"],
                        "list_inputs": ["choices"], "max_qa_length": max_qa_length,
                        "input_format": "[CLS] context [SEP] " + (
                            "the question with '_' replaced by the choice, or "
                            if self.fill_blank else "") + "question choice [SEP] per choice; "
                        "choices: a list of strings, '' for none"}


def choice_features(arrays, lengths, examples):
    """`Features` of encoded questions, with their answers as `label` when every one
    has an answer (an unlabelled split has none)."""
    if any(e.label is None for e in examples):
        return Features(arrays, lengths)
    arrays["label"] = np.array([e.label for e in examples], np.int32)
    return Features(arrays, lengths, label_keys=("label",))


def choice_metrics(examples, predicted):
    """`accuracy`, `chance_accuracy` (the mean of 1 / choices) and the majority
    position's (`majority_position`: the answer's most frequent index,
    `majority_position_accuracy`: always choosing it) of all questions, and the
    accuracy of each group (`{group}_accuracy`, `{group}_questions`)."""
    labels = np.array([e.label for e in examples])
    chance = np.array([1.0 / len(e.choices) for e in examples])
    position = int(metrics.majority(labels))
    results = {"accuracy": metrics.accuracy(labels, predicted),
               "chance_accuracy": float(chance.mean()), "majority_position": position,
               "majority_position_accuracy": metrics.accuracy(labels, np.full_like(labels,
                                                                                   position)),
               "questions": len(examples)}
    groups = np.array([e.group for e in examples])
    for group in sorted(set(groups) - {""}):
        inside = groups == group
        results[f"{group}_accuracy"] = metrics.accuracy(labels[inside], predicted[inside])
        results[f"{group}_questions"] = int(inside.sum())
    return results


def write_choice_predictions(examples, logits, path):
    """One JSON line a question: `id`, `choice_index`, `choice`, `probabilities`."""
    with atomic_file(path, "w", encoding="utf-8", newline="\n") as f:
        for example, row in zip(examples, np.asarray(logits, np.float64)):
            row = row[:len(example.choices)]
            probabilities = np.exp(row - row.max())
            probabilities /= probabilities.sum()
            index = int(np.argmax(row))
            f.write(json.dumps({"id": example.guid, "choice_index": index,
                                "choice": example.choices[index],
                                "probabilities": [round(float(p), 6) for p in probabilities]},
                               ensure_ascii=False) + "\n")


# -- Checked fields, shared by the readers ---------------------------------------

def checked_choices(values, name, where):
    """`values` as a tuple of at least two non-empty strings, else an error naming `name`."""
    if not isinstance(values, list):
        json_field({name: values}, name, list, where)  # raises: not an array
    if len(values) < 2:
        raise ValueError(f"{where}: field {name!r}: expected at least 2 choices, got "
                         f"{len(values)}")
    for i, value in enumerate(values):
        if not isinstance(value, str):
            json_field({f"{name}[{i}]": value}, f"{name}[{i}]", str, where)  # raises
        if not value.strip():
            raise ValueError(f"{where}: field '{name}[{i}]': empty choice")
    return tuple(values)


def label_index(label, choices, name, where):
    """The index a label names: an integer index into `choices`, or a choice's text."""
    if isinstance(label, int) and not isinstance(label, bool):
        if not 0 <= label < len(choices):
            raise ValueError(f"{where}: field {name!r}: index {label} is out of range for "
                             f"{len(choices)} choices (0 to {len(choices) - 1})")
        return label
    if not isinstance(label, str):
        raise ValueError(f"{where}: field {name!r}: expected a choice's index (an integer) "
                         f"or its text (a string), got {json.dumps(label)}")
    found = [i for i, choice in enumerate(choices) if choice == label]
    if len(found) != 1:
        problem = "is not among" if not found else f"is {len(found)} of"
        raise ValueError(f"{where}: field {name!r}: {label!r} {problem} the choices "
                         f"{json.dumps(list(choices), ensure_ascii=False)}")
    return found[0]


# -- Your own files ---------------------------------------------------------------

def read_choice_file(path, fmt, split, labelled):
    """The `ChoiceExample`s of one JSON-lines file (see the module docstring)."""
    if user_files.file_format(path, fmt) != "jsonl":
        raise ValueError(f"{path}: task 'multiple_choice' reads JSON lines (its 'choices' "
                         "is a list); give a .jsonl file or --format=jsonl")
    examples = []
    for row in user_files.read_rows(path, "jsonl"):
        values, where = row.values, row.where
        context = json_field(values, "context", str, where)
        question = json_field(values, "question", str, where)
        choices = checked_choices(json_field(values, "choices", list, where), "choices", where)
        label = None
        if labelled:
            if "label" not in values:
                raise ValueError(f"{where}: missing field 'label' (the right choice's index "
                                 "or text)")
            label = label_index(values["label"], choices, "label", where)
        guid = values.get("id", f"{split}-{row.line}")
        if not isinstance(guid, (str, int)) or isinstance(guid, bool):
            raise ValueError(f"{where}: field 'id': expected a string or an integer")
        examples.append(ChoiceExample(str(guid), context, question, choices, label))
    return examples


class OwnChoiceTask(MultipleChoiceTask):
    """`--task=multiple_choice` on the user's own JSON-lines files."""

    def kfold_files(self, options, data_dir, k, folder):
        """Folds of the training questions, by a hash of each row."""
        options = options or MultipleChoiceOptions()
        user_files.check_kfold_options(options, self.name)
        path = user_files.split_file(options, data_dir, "train", self.name)
        return user_files.write_folds(path, k, folder,
                                      lambda: user_files.row_records(path, options.format))

    def read_examples(self, data_dir, split, options=None):
        options = options or MultipleChoiceOptions()
        path = user_files.split_file(options, data_dir, split, self.name)
        return read_choice_file(path, options.format, split,
                                labelled=split not in self.test_splits)


register(OwnChoiceTask(declarations()["multiple_choice"]))
