"""RACE (Lai et al. 2017): English exam reading comprehension, `--task=race`.

The reader takes RACE as it is distributed: `--data_dir` holds
`train/`, `dev/` and `test/` (or `RACE/train`, ... as run_race.py's
`--data_dir` does), each with `middle/` and `high/` folders of `*.txt`
files, one JSON object an article (a line):
`{"article", "questions": [...], "options": [[...], ...], "answers": ["A", ...], "id"}`.

Each question becomes one `ChoiceExample` whose choices are its options, as
google-research/albert `race_utils.RaceProcessor`: the context is the
article, and a question with a blank ("_") has it filled with each option
(`fill_blank`), else the option follows the question. Accuracy is reported on
middle, high and all questions, for dev and test (RACE's test set has its
answers; ALBERT reports it).
"""

import json
import os

from albert_tf.io_utils import json_field, json_objects, numbered_lines
from albert_tf.tasks import declarations, register
from albert_tf.tasks.multiple_choice.task import (ChoiceExample, MultipleChoiceTask,
                                                  checked_choices)

LEVELS = ("middle", "high")
SPLITS = ("train", "dev", "test")


def race_folder(data_dir):
    """The folder holding train/dev/test: `data_dir`, or `data_dir/RACE`."""
    nested = os.path.join(data_dir, "RACE")
    if not os.path.isdir(os.path.join(data_dir, "train")) and os.path.isdir(nested):
        return nested
    return data_dir


def _answer_index(letter, choices, where, number):
    name = f"answers[{number}]"
    if not isinstance(letter, str) or len(letter) != 1 or \
            not 0 <= ord(letter) - ord("A") < len(choices):
        last = chr(ord("A") + len(choices) - 1)
        raise ValueError(f"{where}: field {name!r}: expected a letter A to {last} "
                         f"({len(choices)} options), got {json.dumps(letter)}")
    return ord(letter) - ord("A")


def article_examples(article, where, level, labelled=True):
    """The `ChoiceExample`s of one RACE article (a JSON object)."""
    context = json_field(article, "article", str, where)
    questions = json_field(article, "questions", list, where)
    options = json_field(article, "options", list, where)
    answers = json_field(article, "answers", list, where) if labelled else None
    for name, values in (("options", options), ("answers", answers)):
        if values is not None and len(values) != len(questions):
            raise ValueError(f"{where}: field {name!r} has {len(values)} entries, "
                             f"'questions' {len(questions)}")
    identifier = article.get("id", os.path.basename(where.split(":")[0]))
    examples = []
    for i, question in enumerate(questions):
        if not isinstance(question, str):
            json_field({f"questions[{i}]": question}, f"questions[{i}]", str, where)  # raises
        choices = checked_choices(options[i], f"options[{i}]", where)
        label = _answer_index(answers[i], choices, where, i) if labelled else None
        examples.append(ChoiceExample(f"{identifier}-{i}", context, question, choices, label,
                                      group=level))
    return examples


def read_race(data_dir, split):
    """Every question of one split, middle then high, files in name order."""
    if split not in SPLITS:
        raise ValueError(f"race has no split {split!r}; splits: {', '.join(SPLITS)}")
    examples = []
    for level in LEVELS:
        folder = os.path.join(race_folder(data_dir), split, level)
        if not os.path.isdir(folder):
            raise FileNotFoundError(f"race split {split!r}: no folder {folder}")
        for name in sorted(n for n in os.listdir(folder) if n.endswith(".txt")):
            path = os.path.join(folder, name)
            for number, article in json_objects(numbered_lines(path), path):
                examples += article_examples(article, f"{path}:{number}", level)
    return examples


class RaceTask(MultipleChoiceTask):
    fill_blank = True
    language = "en"
    test_splits = ("test",)
    scored_test_splits = ("test",)

    def read_examples(self, data_dir, split, options=None):
        return read_race(data_dir, split)


register(RaceTask(declarations()["race"]))
