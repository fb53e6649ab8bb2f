"""Reading CHID: CLUE's files and FewCLUE's, one example a blank.

`--data_dir` holds a split's file under CLUE's name or FewCLUE's (the first
found of `SPLIT_FILES`); which of the two formats a file is in is read from
its first line, and every line must then be in it:

- CLUE (CLUEbenchmark/CLUE's `chid_public.zip`): JSON lines
  `{"candidates": [...], "content": [passages]}`, each passage with blanks
  `#idiomNNNNNN#`, the candidates (about 10 idioms) shared by the line's
  passages; the answers are in `<file stem>_answer.json` beside it, one JSON
  object `{"#idiom000000#": candidate index, ...}` (`train_answer.json`,
  `dev_answer.json`; the test file has none).
- FewCLUE (CLUEbenchmark/FewCLUE `datasets/chid/`): JSON lines
  `{"id", "candidates": [...], "content": "...", "answer": index}` with one
  blank `#idiom#` in `content` (`test.json` has no `answer`).

Each blank becomes one `Blank`, a question over its line's candidates (as
CLUE's baseline reads them, `CHID_preprocess.read_chid_examples`); the
blanks of one line are a passage group, whose answers use each candidate
once (`albert_tf.steps.cloze_decode`). Answers are required in the train and
dev splits and read where present in the test split. A problem names the
file, the line, the field and the blank.
"""

import dataclasses
import os
import re

from albert_tf.io_utils import json_field, json_kind, json_objects, numbered_lines, read_json
from albert_tf.tasks.multiple_choice.task import checked_choices, label_index

# A blank, as CLUE (`#idiom000123#`) and FewCLUE (`#idiom#`) write it: an RE2
# pattern too (`albert_tf.steps.cloze.blank_texts`), so ASCII digits only.
BLANK = "#idiom[0-9]*#"
SPLIT_FILES = {"train": ("train.json", "train_few_all.json"),
               "dev": ("dev.json", "dev_few_all.json"),
               "test": ("test1.1.json", "test.json", "test1.0.json", "test_public.json")}
CLUE, FEWCLUE = "clue", "fewclue"


@dataclasses.dataclass(frozen=True)
class Blank:
    """One blank of a passage: a question over the candidates of its line.

    key: what the submission file names the blank by: its tag (CLUE's
        `#idiom000123#`) or its line's `id` (FewCLUE).
    passage: the passage, with all its blanks.
    ordinal: which of the passage's blanks this is (from 0).
    choices: the candidates, shared by the blanks of `group`.
    label: the index of the right candidate, or None.
    group: the passage group (its line's number): each candidate fills one
        of its blanks at most.
    layout: the file's format, `CLUE` or `FEWCLUE` (its submission file's).
    """

    key: object
    passage: str
    ordinal: int
    choices: tuple
    label: int | None
    group: int
    layout: str = CLUE


def split_file(data_dir, split):
    """The file of `split` in `data_dir`: the first of its names that exists."""
    if split not in SPLIT_FILES:
        raise ValueError(f"chid has no split {split!r}; splits: {', '.join(SPLIT_FILES)}")
    names = SPLIT_FILES[split]
    for name in names:
        path = os.path.join(data_dir, name)
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(f"chid split {split!r}: no {' or '.join(names)} in {data_dir}")


def answer_file(path):
    """CLUE's answers of a data file: `train.json` -> `train_answer.json`."""
    stem, ext = os.path.splitext(path)
    return f"{stem}_answer{ext}"


def read_answers(path):
    """`{blank tag: answer}` of a CLUE answer file (one JSON object)."""
    answers = read_json(path)
    if not isinstance(answers, dict):
        raise ValueError(f"{path}: expected one JSON object {{blank: candidate index}}, got "
                         f"{json_kind(answers)}")
    return answers


def line_format(row, where):
    """`CLUE` (`content` a list of passages) or `FEWCLUE` (`content` a string)."""
    if "content" not in row:
        raise ValueError(f"{where}: missing field 'content'")
    content = row["content"]
    if isinstance(content, list):
        return CLUE
    if isinstance(content, str):
        return FEWCLUE
    raise ValueError(f"{where}: field 'content': expected a list of passages (CLUE) or a "
                     f"string (FewCLUE), got {json_kind(content)}")


@dataclasses.dataclass(frozen=True)
class Answers:
    """A CLUE answer file's `values` (tag -> answer) and its `path`."""

    values: dict
    path: str


def clue_blanks(row, where, group, answers):
    """The `Blank`s of one CLUE line; `answers` (tag -> answer) or None."""
    choices = checked_choices(json_field(row, "candidates", list, where), "candidates", where)
    blanks = []
    for number, passage in enumerate(json_field(row, "content", list, where)):
        if not isinstance(passage, str):
            json_field({f"content[{number}]": passage}, f"content[{number}]", str, where)
        for ordinal, tag in enumerate(re.findall(BLANK, passage)):
            label = None
            if answers is not None:
                at = f"{where}: field 'content[{number}]', blank {tag}"
                if tag not in answers.values:
                    raise ValueError(f"{at}: no answer in {answers.path}")
                label = label_index(answers.values[tag], choices, "answer", at)
            blanks.append(Blank(tag, passage, ordinal, choices, label, group))
    return blanks


def fewclue_blank(row, where, group, labelled):
    """The one `Blank` of a FewCLUE line (`answer` read if `labelled` or present)."""
    choices = checked_choices(json_field(row, "candidates", list, where), "candidates", where)
    passage = json_field(row, "content", str, where)
    found = re.findall(BLANK, passage)
    if len(found) != 1:
        raise ValueError(f"{where}: field 'content': expected one blank #idiom#, found "
                         f"{len(found)}")
    label = None
    if labelled or "answer" in row:
        if "answer" not in row:
            raise ValueError(f"{where}: missing field 'answer' (the right candidate's index)")
        label = label_index(row["answer"], choices, "answer", where)
    key = row.get("id", group)
    if not isinstance(key, (str, int)) or isinstance(key, bool):
        raise ValueError(f"{where}: field 'id': expected a string or an integer")
    return Blank(key, passage, 0, choices, label, group, FEWCLUE)


def read_blanks(path, labelled):
    """Every blank of one CHID file, in file order (see the module docstring)."""
    layout, answers, blanks = None, None, []
    for number, row in json_objects(numbered_lines(path), path):
        where = f"{path}:{number}"
        found = line_format(row, where)
        if layout is None:
            layout = found
            answers = _clue_answers(path, labelled) if layout == CLUE else None
        elif found != layout:
            raise ValueError(f"{where}: field 'content': a {'list' if found == CLUE else 'string'}"
                             f" ({found}'s format), but the file's first line is in {layout}'s")
        if layout == CLUE:
            blanks += clue_blanks(row, where, number, answers)
        else:
            blanks.append(fewclue_blank(row, where, number, labelled))
    _check_unique([b for b in blanks if b.layout == CLUE], path)
    return blanks


def _clue_answers(path, labelled):
    """The answers of a CLUE data file: required if `labelled`, else read if present."""
    answers_path = answer_file(path)
    if not os.path.isfile(answers_path):
        if labelled:
            raise FileNotFoundError(f"{path}: no answer file {answers_path} (CLUE's answers "
                                    "of a CHID file are beside it)")
        return None
    return Answers(read_answers(answers_path), answers_path)


def _check_unique(blanks, path):
    """CLUE's answers and predictions are keyed by tag: one blank a tag in a file."""
    seen = {}
    for blank in blanks:
        if blank.key in seen:
            raise ValueError(f"{path}:{blank.group}: blank {blank.key} is also on line "
                             f"{seen[blank.key]}: a tag names one blank")
        seen[blank.key] = blank.group


def read_chid(data_dir, split):
    """The `Blank`s of a split (labelled but for the test split's)."""
    return read_blanks(split_file(data_dir, split), labelled=split != "test")
