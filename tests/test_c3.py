"""C3: the reader (both halves, the context join, answers by text) and its bad input."""

import json
import os
import shutil

import pytest

from albert_tf import tasks
from conftest import FIXTURES, SHARED
from albert_tf.tasks.multiple_choice.c3 import read_c3

C3 = os.path.join(FIXTURES, "mc", "c3")


def test_dialogue_then_mixed_genre_with_the_lines_joined_by_newlines():
    train = read_c3(C3, "train")
    assert [e.group for e in train] == ["d", "d", "m", "m"]
    assert train[0].context == "\n".join(["男：你明天去图书馆吗?", "女：不去，我要去医院看朋友。"])
    assert train[0].choices == ("图书馆", "医院", "学校") and train[0].label == 1
    assert [e.label for e in train] == [1, 2, 1, 0]
    assert train[2].guid == "m-m1-0" and train[3].guid == "m-m1-1"
    assert tasks.get("c3").eval_splits == ("dev",)
    assert tasks.get("c3").scored_test_splits == ("test",)


def _write(tmp_path, documents, subset="d", split="dev"):
    for name in ("c3-d-dev.json", "c3-m-dev.json"):
        shutil.copy(os.path.join(C3, name), tmp_path / name)
    path = tmp_path / f"c3-{subset}-{split}.json"
    path.write_text(json.dumps(documents, ensure_ascii=False, indent=1), encoding="utf-8")
    return str(path)


GOOD = [["甲。"], [{"question": "问?", "choice": ["一", "二"], "answer": "二"}], "7-1"]


@pytest.mark.parametrize("question, message", [
    ({"question": "问?", "choice": ["一", "二"], "answer": "三"},
     "field 'answer': '三' is not among the choices [\"一\", \"二\"]"),
    ({"question": "问?", "choice": ["一", "二"]}, "missing field 'answer'"),
    ({"choice": ["一", "二"], "answer": "一"}, "missing field 'question'"),
    ({"question": "问?", "choice": [], "answer": "一"},
     "field 'choice': expected at least 2 choices, got 0"),
    ({"question": "问?", "choice": ["一", ""], "answer": "一"},
     "field 'choice[1]': empty choice"),
])
def test_bad_questions_name_the_file_document_question_and_field(tmp_path, question, message):
    path = _write(tmp_path, [GOOD, [["乙。"], [GOOD[1][0], question], "8-2"]])
    with pytest.raises(ValueError) as error:
        read_c3(str(tmp_path), "dev")
    assert str(error.value).startswith(f'{path}: document 1 (id "8-2"), question 1: {message}')


def test_bad_documents_and_missing_files(tmp_path):
    path = _write(tmp_path, [GOOD, ["乙。", [], "x"]], subset="m")
    with pytest.raises(ValueError, match=r"document 1 \(id \"x\"\): the passage \(item 0\) must"):
        read_c3(str(tmp_path), "dev")
    with open(path, "w", encoding="utf-8") as f:
        f.write('[\n ["a"\n')
    with pytest.raises(ValueError, match=f"{path}:3: not JSON"):
        read_c3(str(tmp_path), "dev")
    os.remove(path)
    with pytest.raises(FileNotFoundError, match="c3 split 'dev': no file .*c3-m-dev.json"):
        read_c3(str(tmp_path), "dev")


@pytest.mark.shared
def test_the_real_c3_test_sets_read_with_every_answer_among_its_choices():
    examples = read_c3(os.path.join(SHARED, "data", "mc", "c3"), "test")
    assert sum(e.group == "d" for e in examples) == 1890
    assert sum(e.group == "m" for e in examples) == 2002
    assert {len(e.choices) for e in examples} == {2, 3, 4}
