"""C3 (Sun et al. 2020): Chinese multiple-choice reading comprehension, `--task=c3`.

The reader takes the original release's files (nlpdata/c3 `data/`) in
`--data_dir`: `c3-d-{split}.json` (dialogues) and `c3-m-{split}.json`
(mixed genre), read together, dialogue first, as CLUE's `c3Processor`
(CLUEbenchmark/CLUE `baselines/models_pytorch/mrc_pytorch/run_c3.py`) reads
them. Each file is one JSON list of documents
`[[passage lines], [{"question", "choice": [...], "answer"}], id]`; the
context is the passage lines joined by "\\n" (as CLUE joins them), and the
label is the index of the choice equal to `answer`.

Questions have 2 to 4 choices; CLUE pads them to 4 with empty choices that
are still scored, here the missing slots are masked out instead
(`AlbertMultipleChoice`). A problem is named by file, document (its
position from 0 and its id), question and field: the files are
pretty-printed JSON lists, so a line number would not point at one document.
"""

import json
import os

from albert_tf.io_utils import json_field, read_text
from albert_tf.tasks import declarations, register
from albert_tf.tasks.multiple_choice.task import ChoiceExample, MultipleChoiceTask, checked_choices, \
    label_index

SUBSETS = ("d", "m")
SPLITS = ("train", "dev", "test")


def c3_files(data_dir, split):
    """The two files of a split, dialogue then mixed genre; both must exist."""
    if split not in SPLITS:
        raise ValueError(f"c3 has no split {split!r}; splits: {', '.join(SPLITS)}")
    paths = [os.path.join(data_dir, f"c3-{subset}-{split}.json") for subset in SUBSETS]
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise FileNotFoundError(f"c3 split {split!r}: no file {' or '.join(missing)} (C3's "
                                "original names: c3-d-{train,dev,test}.json, c3-m-*.json)")
    return paths


def _load(path):
    try:
        documents = json.loads(read_text(path))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{e.lineno}: not JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(documents, list):
        raise ValueError(f"{path}: expected a JSON list of documents, got "
                         f"{type(documents).__name__}")
    return documents


def document_examples(document, where, subset):
    """The `ChoiceExample`s of one C3 document `[lines, questions, id]`."""
    if not isinstance(document, list) or len(document) != 3:
        raise ValueError(f"{where}: expected [passage lines, questions, id]")
    lines, questions, identifier = document
    if not isinstance(lines, list) or not all(isinstance(t, str) for t in lines):
        raise ValueError(f"{where}: the passage (item 0) must be a list of strings")
    if not isinstance(questions, list):
        raise ValueError(f"{where}: the questions (item 1) must be a list")
    context = "\n".join(lines)
    examples = []
    for number, question in enumerate(questions):
        at = f"{where}, question {number}"
        if not isinstance(question, dict):
            raise ValueError(f"{at}: expected an object with question, choice, answer")
        text = json_field(question, "question", str, at)
        choices = checked_choices(json_field(question, "choice", list, at), "choice", at)
        label = label_index(json_field(question, "answer", str, at), choices, "answer", at)
        examples.append(ChoiceExample(f"{subset}-{identifier}-{number}", context, text,
                                      choices, label, group=subset))
    return examples


def read_c3(data_dir, split):
    """Every question of one split: c3-d's documents, then c3-m's, in file order."""
    examples = []
    for subset, path in zip(SUBSETS, c3_files(data_dir, split)):
        for position, document in enumerate(_load(path)):
            identifier = document[2] if isinstance(document, list) and len(document) == 3 \
                else "?"
            examples += document_examples(document, f"{path}: document {position} (id "
                                          f"{json.dumps(identifier, ensure_ascii=False)})",
                                          subset)
    return examples


class C3Task(MultipleChoiceTask):
    """Accuracy on all questions and on each half (`d_accuracy`, `m_accuracy`)."""

    language = "zh"
    test_splits = ("test",)
    scored_test_splits = ("test",)

    def read_examples(self, data_dir, split, options=None):
        return read_c3(data_dir, split)


register(C3Task(declarations()["c3"]))
