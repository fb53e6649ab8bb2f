"""RACE: the reader (layout, blanks, answers, middle/high) and its bad input."""

import json
import os
import shutil

import pytest

from albert_tf import tasks
from conftest import FIXTURES
from albert_tf.tasks.multiple_choice.race import read_race

RACE = os.path.join(FIXTURES, "mc", "race")


def test_every_question_of_middle_then_high_with_its_answer_letter():
    train = read_race(RACE, "train")
    assert [e.group for e in train] == ["middle", "middle", "high", "high"]
    assert [e.label for e in train] == [1, 2, 0, 1]  # B, C, A, B
    assert train[0].guid == "middle1.txt-0" and train[3].guid == "high1.txt-1"
    assert train[0].context.startswith("Tom has a dog") and len(train[0].choices) == 4
    test = read_race(RACE, "test")
    assert [e.label for e in test] == [2, 1, 1]


def test_race_fills_blanks_and_reads_the_nested_layout_too(tmp_path):
    task = tasks.get("race")
    assert task.fill_blank and task.eval_splits == ("dev",)
    assert task.scored_test_splits == ("test",)
    shutil.copytree(RACE, tmp_path / "RACE")  # run_race.py's --data_dir holds RACE/
    assert len(task.read_examples(str(tmp_path), "dev")) == 2


def _article(tmp_path, **changes):
    article = {"id": "x.txt", "article": "A text.", "questions": ["Q?", "R _ ."],
               "options": [["a", "b", "c", "d"], ["e", "f", "g", "h"]], "answers": ["A", "D"]}
    article.update(changes)
    for level in ("middle", "high"):
        folder = tmp_path / "dev" / level
        folder.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "dev" / "middle" / "x.txt"
    path.write_text(json.dumps(article) + "\n", encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("changes, message", [
    ({"answers": ["A", "E"]},
     "field 'answers[1]': expected a letter A to D (4 options), got \"E\""),
    ({"answers": ["A", 1]}, "field 'answers[1]': expected a letter A to D"),
    ({"answers": ["A"]}, "field 'answers' has 1 entries, 'questions' 2"),
    ({"options": [["a", "b", "c", "d"]]}, "field 'options' has 1 entries, 'questions' 2"),
    ({"options": [["a", "b"], ["e", ""]]}, "field 'options[1][1]': empty choice"),
    ({"article": None}, "field 'article': expected a string, got null"),
])
def test_bad_articles_name_the_file_line_and_field(tmp_path, changes, message):
    path = _article(tmp_path, **changes)
    with pytest.raises(ValueError) as error:
        read_race(str(tmp_path), "dev")
    assert str(error.value) == f"{path}:1: {message}" or \
        str(error.value).startswith(f"{path}:1: {message}")


def test_a_missing_article_field_and_a_missing_folder(tmp_path):
    path = _article(tmp_path)
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps({"article": "A.", "questions": ["Q?"], "options": [["a", "b"]]}))
    with pytest.raises(ValueError, match=f"{path}:1: missing field 'answers'"):
        read_race(str(tmp_path), "dev")
    with pytest.raises(FileNotFoundError, match="race split 'train': no folder"):
        read_race(str(tmp_path), "train")
