"""albert_tf.tasks.squad.cmrc2018_evaluate against the official CMRC 2018 script (ymcui/cmrc2018 squad-style-data).

Three kinds of evidence: cases worked out by hand from the script's rules;
scores recorded from the official script itself under Python 2.7 on 1,000
generated (prediction, answers) pairs (tests/fixtures/clue/cmrc2018/official,
see its README); and a plain transliteration of the script's logic, below,
on random strings.
"""

import json
import os
import random
import re
import sys

import pytest

import cli_helpers as cli
from conftest import FIXTURES, SHARED
from albert_tf.tasks.squad import cmrc2018_evaluate as ev
from albert_tf.tasks.squad.evaluate import Question

CMRC = os.path.join(FIXTURES, "clue", "cmrc2018")
OFFICIAL = os.path.join(CMRC, "official")


# -- By hand --------------------------------------------------------------------

def test_exact_match_drops_only_the_scripts_punctuation():
    assert ev.exact_match("《战国无双3》", "战国无双3") == 1
    assert ev.exact_match("北京：“中关村”", "北京中关村") == 1
    assert ev.exact_match("A-B_C", "abc") == 1          # case too
    assert ev.exact_match("北京,", "北京") == 0          # ASCII comma is not on the list
    assert ev.exact_match("好…", "好") == 0              # "……" is listed, one "…" never matches
    assert ev.exact_match("答案 -", "答案") == 0         # stripped before "-" goes: "答案 " stays
    assert ev.exact_match(" 答案\u3000", "答案") == 1
    assert ev.exact_match("，", "") == 1


def test_mixed_segmentation():
    assert ev.segments("2018年ALBERT模型, e.g. U.S.") == \
        ["2018", "年", "albert", "模", "型", ",", "e.g.", "u.s", "."]
    assert ev.segments("第3.5版") == ["第", "3.5", "版"]
    assert ev.segments("a-b") == ["ab"]                 # a deleted character joins its run
    assert ev.segments("ab中cd") == ["ab", "中", "cd"]
    assert ev.segments("ab\u9fa6cd") == ["ab\u9fa6cd"]  # past U+9FA5: not "Chinese" to it
    assert ev.segments("《战国无双3》") == ["战", "国", "无", "双", "3"]
    assert ev.segments("，。") == []


def test_python2_case_and_space():
    assert ev.segments("ΑΣ") == ["ασ"]        # no final sigma ("ας" in Python 3)
    assert ev.segments("İ") == ["i"]          # simple mapping ("i̇" in Python 3)
    assert ev.exact_match("\u180e北京", "北京") == 1
    expected = {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()} | {"\u180e"}
    assert set(ev._WHITESPACE) == expected


def test_f1_uses_the_longest_common_contiguous_run():
    # Common subsequence 甲乙丁 (3), but the longest common run is one character.
    assert ev.f1("甲丙乙丁", "甲乙丙丁") == 0.25
    assert ev.f1("北京大学", "北京") == 2 * (2 / 4) * 1 / (2 / 4 + 1)
    assert ev.f1("", "北京") == 0 and ev.f1("，", "，") == 0


def test_best_of_each_metric_over_the_answers():
    assert ev.score("北京", ["北京大学", "北京"]) == (1, 1.0)
    em, f1 = ev.score("甲乙丙丁", ["甲乙", "甲乙丙丁戊"])
    assert em == 0 and f1 == pytest.approx(8 / 9)
    with pytest.raises(ValueError, match="no answers"):
        ev.score("x", [])


def _data(*questions):
    return [{"paragraphs": [{"context": "", "qas": [
        {"id": qid, "question": "?", "answers": [{"text": t, "answer_start": -1}
                                                 for t in answers]}
        for qid, answers in questions]}]}]


def test_missing_predictions_count_in_total_and_skip(capsys):
    data = _data(("q1", ["北京"]), (" q2 ", ["上海"]), ("q3", ["广州", "深圳"]))
    result = ev.evaluate(data, {"q1": "北京", "q2": "上海市"})
    assert ev.f1("上海市", "上海") == pytest.approx(0.8)
    assert result == {"F1": 100.0 * (1.0 + ev.f1("上海市", "上海")) / 3, "EM": 100.0 / 3,
                      "TOTAL": 3, "SKIP": 1}
    assert capsys.readouterr().err == "Unanswered question: q3\n"
    assert ev.official_output(result, "p.json") == {
        "AVERAGE": "46.667", "F1": "60.000", "EM": "33.333", "TOTAL": 3, "SKIP": 1,
        "FILE": "p.json"}
    assert list(ev.official_output(result, "p.json")) == list(ev.KEYS)


def test_score_questions_is_evaluate_on_the_same_questions():
    data = _data(("a", ["一二三"]), ("b", ["四五"]))
    predictions = {"a": "一二", "b": "四五六"}
    assert ev.score_questions([Question("a", ["一二三"]), Question("b", ["四五"])],
                              predictions) == ev.evaluate(data, predictions)


# -- The official script's own scores -------------------------------------------

def test_recorded_official_scores():
    with open(os.path.join(OFFICIAL, "official_scores.json"), encoding="utf-8") as f:
        pairs = json.load(f)
    assert len(pairs) == 1000
    same_nltk = [p for p in pairs if not p["nltk_differs"]]
    # NLTK 3.4.5 (the last for Python 2) and 3.10 split 10 of these inputs differently.
    assert len(same_nltk) == 990
    for pair in same_nltk:
        assert ev.score(pair["prediction"], pair["answers"]) == (pair["em"], pair["f1"]), pair
    assert sum(p["em"] for p in pairs) > 100 and sum(0 < p["f1"] < 1 for p in pairs) > 300


def test_cli_prints_what_the_official_script_printed():
    predictions = os.path.join(OFFICIAL, "dev_predictions.json")
    result = cli.run("albert_tf.tasks.squad.cmrc2018_evaluate", os.path.join(CMRC, "dev.json"), predictions)
    assert result.returncode == 0, result.stderr
    with open(os.path.join(OFFICIAL, "dev_official_output.txt"), encoding="utf-8") as f:
        official = json.loads(f.read())
    printed = json.loads(result.stdout)
    assert list(printed) == list(official)
    assert {**printed, "FILE": None} == {**official, "FILE": None}
    assert printed["FILE"] == predictions
    with open(os.path.join(OFFICIAL, "dev_official_stderr.txt"), encoding="utf-8") as f:
        assert result.stderr == f.read()


# -- A plain reading of the script, on random strings ---------------------------

_SCRIPT_PUNCTUATION = ["-", ":", "_", "*", "^", "/", "\\", "~", "`", "+", "=", "，", "。", "：",
                       "？", "！", "“", "”", "；", "’", "《", "》", "……", "·", "、", "「", "」",
                       "（", "）", "－", "～", "『", "』"]


def _reference_prepare(text):
    return "".join(c.lower()[0] for c in text).strip(ev._WHITESPACE)


def _reference_segments(text):
    from nltk import word_tokenize

    def tokenize(run):
        return word_tokenize(run.replace("\u180e", " "), preserve_line=True)

    segs, temp = [], ""
    for char in _reference_prepare(text):
        if char in _SCRIPT_PUNCTUATION:
            continue
        if "\u4e00" <= char <= "\u9fa5" or char in _SCRIPT_PUNCTUATION:
            if temp != "":
                segs.extend(tokenize(temp))
                temp = ""
            segs.append(char)
        else:
            temp += char
    if temp != "":
        segs.extend(tokenize(temp))
    return segs


def _reference_lcs(s1, s2):
    m = [[0] * (len(s2) + 1) for _ in range(len(s1) + 1)]
    best = 0
    for i in range(len(s1)):
        for j in range(len(s2)):
            if s1[i] == s2[j]:
                m[i + 1][j + 1] = m[i][j] + 1
                best = max(best, m[i + 1][j + 1])
    return best


def _reference_score(answers, prediction):
    f1s = []
    for answer in answers:
        a, p = _reference_segments(answer), _reference_segments(prediction)
        common = _reference_lcs(a, p)
        if common == 0:
            f1s.append(0)
            continue
        precision, recall = 1.0 * common / len(p), 1.0 * common / len(a)
        f1s.append((2 * precision * recall) / (precision + recall))
    strip = lambda t: "".join(c for c in _reference_prepare(t) if c not in _SCRIPT_PUNCTUATION)
    em = int(any(strip(a) == strip(prediction) for a in answers))
    return em, max(f1s)


_ALPHABET = (list("北京大学的中国一二三四五六七八九十年月日人") + list("abcXYZ019.'\"(),!?")
             + _SCRIPT_PUNCTUATION + ["…", "—", "‘", " ", " ", "\u3000", "\t", "İ", "Σ"])


def _random_text(rng):
    return "".join(rng.choice(_ALPHABET) for _ in range(rng.randrange(0, 12)))


def test_matches_a_plain_reading_of_the_script_on_random_strings():
    rng = random.Random(2018)
    for _ in range(3000):
        answers = [_random_text(rng) for _ in range(rng.randrange(1, 4))]
        # Half the predictions share a piece with an answer, so F1 is often in (0, 1).
        prediction = _random_text(rng) + (answers[0][1:7] if rng.random() < 0.5 else "")
        assert ev.score(prediction, answers) == _reference_score(answers, prediction), \
            (prediction, answers)


# -- Bad input ------------------------------------------------------------------

def _write(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content),
                    encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("data,predictions,message", [
    ('{"data": [', {}, r"data.json:1:\d+: invalid JSON"),
    ({"data": [{"paragraphs": [{"qas": [{"id": "q", "answers": [{}]}]}]}]}, {"q": "x"},
     r"data.json: data\[0\].paragraphs\[0\].qas\[0\].answers\[0\]: missing field 'text'"),
    ({"data": [{"paragraphs": [{"qas": [{"id": "q", "answers": []}]}]}]}, {"q": "x"},
     r"data.json: question 'q': a question has no answers"),
    ({"version": "1"}, {}, r"data.json: not a SQuAD-format file"),
    ({"data": []}, ["x"], r"pred.json: predictions must be an object"),
    ({"data": []}, {"q": 3}, r"pred.json: predictions: the value for 'q' must be a string"),
])
def test_bad_input_is_one_line_naming_the_file(tmp_path, data, predictions, message):
    args = [_write(tmp_path, "data.json", data), _write(tmp_path, "pred.json", predictions)]
    result = cli.run("albert_tf.tasks.squad.cmrc2018_evaluate", *args)
    line = cli.one_line_error(result)
    assert re.search(message, line), line


@pytest.mark.shared
def test_shared_trial_set_scores_its_own_answers_full_marks():
    path = os.path.join(SHARED, "data", "clue", "cmrc2018", "trial.json")
    with open(path, encoding="utf-8") as f:
        data = json.load(f)["data"]
    questions = [q for a in data for p in a["paragraphs"] for q in p["qas"]]
    gold = {q["id"]: q["answers"][0]["text"] for q in questions}
    assert ev.evaluate(data, gold) == {"F1": 100.0, "EM": 100.0, "TOTAL": 1002, "SKIP": 0}
