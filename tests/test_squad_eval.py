"""SQuAD v1.1 / v2.0 metrics against values worked out by hand.

Fixtures (tests/fixtures/squad): v1_dev.json + v1_pred.json (4 questions, one
unanswered) and v2_dev.json + v2_pred.json + v2_na_prob.json (3 answerable,
2 unanswerable questions).
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import FIXTURES
from albert_tf.tasks.squad import evaluate as squad_eval
from albert_tf.tasks.squad.evaluate import evaluate_v1, evaluate_v2, exact_match, f1, find_best_threshold

SQUAD = os.path.join(FIXTURES, "squad")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _fixture(name):
    with open(os.path.join(SQUAD, name), encoding="utf-8") as f:
        return json.load(f)


def _squad(*questions, version="v2.0"):
    """A one-paragraph SQuAD file; each question is (id, [gold texts])."""
    qas = [{"id": qid, "question": "?", "answers": [{"text": t} for t in texts]}
           for qid, texts in questions]
    return {"version": version, "data": [{"title": "t", "paragraphs": [
        {"context": "c", "qas": qas}]}]}


@pytest.mark.parametrize("text,normalized", [
    ("The  Cat's hat!", "cats hat"),      # lower, drop "'" and "!", drop "the", squeeze
    ("An apple a day", "apple day"),
    ("theatre", "theatre"),               # articles only as whole words
    ("the-end", "theend"),                # punctuation goes first: no "the" word left
    ("A.", ""),
    ("\tNew\n York ", "new york"),
    ("café’s – crème", "café’s – crème"),  # non-ASCII punctuation is kept
])
def test_normalize_answer(text, normalized):
    assert squad_eval.normalize_answer(text) == normalized


def test_f1_counts_tokens_with_multiplicity():
    # common = {cat: min(2, 1), dog: min(1, 2)} = 2 tokens; P = R = 2/3 -> F1 = 2/3
    assert f1("cat cat dog", "cat dog dog") == pytest.approx(2 / 3)
    # P = 1/2, R = 1/2 -> 1/2; no common token -> 0
    assert f1("in Paris", "Paris, France") == pytest.approx(0.5)
    assert f1("London", "Paris") == 0


def test_empty_answers_differ_between_versions():
    # "the" and "" both normalise to "": equal, so exact match; v1.1's F1 finds
    # no common token (0), v2.0's treats two empty answers as agreeing (1).
    assert exact_match("", "the") == 1
    assert f1("", "the", empty_agrees=False) == 0
    assert f1("", "the", empty_agrees=True) == 1
    assert f1("Paris", "", empty_agrees=True) == 0
    assert f1("", "Paris", empty_agrees=True) == 0


def test_v1_fixture_by_hand(capsys):
    scores = evaluate_v1(_fixture("v1_dev.json")["data"], _fixture("v1_pred.json"))
    # v1-tower: "Eiffel tower." == "The Eiffel Tower" after normalising: EM 1, F1 1.
    # v1-city: "in Paris" vs "Paris, France": P 1/2, R 1/2: EM 0, F1 1/2.
    # v1-year: 5 tokens vs "1889" (P 1/5, R 1: F1 1/3) or "in 1889" (P 2/5, R 1:
    #   F1 4/7); best 4/7. v1-height: no prediction, 0 but still counted.
    assert list(scores) == ["exact_match", "f1"]
    assert scores["exact_match"] == 25.0
    assert scores["f1"] == pytest.approx(100 * (1 + 1 / 2 + 4 / 7) / 4)  # 29/56
    assert capsys.readouterr().err == "Unanswered question v1-height will receive score 0.\n"


def test_v1_rejects_question_without_answers():
    data = _squad(("q", []), version="1.1")["data"]
    with pytest.raises(ValueError, match="question 'q' has no answers, which SQuAD v1.1 needs"):
        evaluate_v1(data, {"q": ""})


V2_PLAIN = {  # v2_pred.json, every no-answer probability 0 (nothing is turned into "")
    # team: "Broncos" == "The Broncos" (1, 1); place: "California" vs "Santa Clara,
    # California": P 1, R 1/3, F1 1/2; sponsor (no answer): "" (1, 1); stadium
    # (no answer): "Levi's Stadium" (0, 0); date: "" (0, 0).
    "exact": 40.0, "f1": 50.0, "total": 5,
    "HasAns_exact": 100 / 3, "HasAns_f1": 50.0, "HasAns_total": 3,
    "NoAns_exact": 50.0, "NoAns_f1": 50.0, "NoAns_total": 2,
}


def test_v2_fixture_by_hand():
    scores = evaluate_v2(_fixture("v2_dev.json")["data"], _fixture("v2_pred.json"))
    assert list(scores) == list(V2_PLAIN)
    assert scores == pytest.approx(V2_PLAIN)


def test_v2_best_threshold_by_hand():
    # Sorted by no-answer probability (stable): team .1, date .2, place .5,
    # stadium .5, sponsor .8. Start: all answered "", score = 2 unanswerable.
    #   exact: team +1 -> 3 (best, thresh .1); date +0; place +0; stadium -1 -> 2;
    #          sponsor +0 ("" predicted) -> 2.      best 3/5 = 60.0 at 0.1
    #   F1:    team +1 -> 3 (best, .1); date +0; place +.5 -> 3.5 (best, .5);
    #          stadium -1 -> 2.5; sponsor +0.     best 3.5/5 = 70.0 at 0.5
    best = find_best_threshold(_fixture("v2_pred.json"), _fixture("v2_na_prob.json"),
                               _fixture("v2_dev.json")["data"])
    assert best == {"best_exact": 60.0, "best_exact_thresh": 0.1,
                    "best_f1": 70.0, "best_f1_thresh": 0.5}
    scores = evaluate_v2(_fixture("v2_dev.json")["data"], _fixture("v2_pred.json"),
                         na_probs=_fixture("v2_na_prob.json"))
    assert list(scores) == list(V2_PLAIN) + list(best)
    assert scores == pytest.approx({**V2_PLAIN, **best})


def test_v2_tie_order_decides_best_threshold():
    # place and stadium tie at .5. With stadium first: team -> 3 (best, .1);
    # date 3; stadium -1 -> 2; place +.5 -> 2.5; sponsor 2.5. Best stays 60.0 at .1.
    probs = {"v2-team": 0.1, "v2-stadium-2017": 0.5, "v2-place": 0.5,
             "v2-sponsor": 0.8, "v2-date": 0.2}
    best = find_best_threshold(_fixture("v2_pred.json"), probs, _fixture("v2_dev.json")["data"])
    assert (best["best_f1"], best["best_f1_thresh"]) == (60.0, 0.1)


def test_v2_threshold_is_strict_and_best_inside_a_tie_is_not_reachable():
    data, preds, probs = (_fixture("v2_dev.json")["data"], _fixture("v2_pred.json"),
                          _fixture("v2_na_prob.json"))
    # Above .4: place (answerable -> 0.0), sponsor and stadium (unanswerable -> 1.0).
    # exact = team 1 + sponsor 1 + stadium 1 = 3/5; F1 the same (place's 1/2 lost).
    at_04 = evaluate_v2(data, preds, na_probs=probs, na_prob_thresh=0.4)
    assert at_04 == pytest.approx({
        "exact": 60.0, "f1": 60.0, "total": 5,
        "HasAns_exact": 100 / 3, "HasAns_f1": 100 / 3, "HasAns_total": 3,
        "NoAns_exact": 100.0, "NoAns_f1": 100.0, "NoAns_total": 2,
        "best_exact": 60.0, "best_exact_thresh": 0.1, "best_f1": 70.0, "best_f1_thresh": 0.5})
    # At the reported best_f1_thresh .5 only sponsor (.8 > .5) becomes "": stadium
    # (.5, not > .5) stays answered, so F1 is 2.5/5 = 50.0, not the 70.0 found
    # between the tied .5s.
    assert evaluate_v2(data, preds, na_probs=probs, na_prob_thresh=0.5)["f1"] == 50.0


def test_v2_without_na_probs_uses_zero():
    # The script sets every probability to 0.0, so a negative threshold turns
    # every prediction into "": answerable 0, unanswerable 1 -> 2/5.
    scores = evaluate_v2(_fixture("v2_dev.json")["data"], _fixture("v2_pred.json"),
                         na_prob_thresh=-1.0)
    assert (scores["exact"], scores["f1"], scores["HasAns_f1"], scores["NoAns_f1"]) == (
        40.0, 40.0, 0.0, 100.0)
    assert "best_f1" not in scores


def test_v2_non_empty_text_that_normalises_to_nothing():
    # "the" on an unanswerable question scores 1 (it normalises to ""), but the
    # threshold search charges it -1 because the text is non-empty. Order:
    # no .1 (score 1 - 1 = 0), yes .2 (+1 -> 1): never above the start of 1,
    # so best_exact = 1/2 = 50.0 at 0.0, below the 100.0 of answering everything.
    data = _squad(("no", []), ("yes", ["Paris"]))["data"]
    preds, probs = {"no": "the", "yes": "Paris"}, {"no": 0.1, "yes": 0.2}
    scores = evaluate_v2(data, preds, na_probs=probs)
    assert (scores["exact"], scores["best_exact"], scores["best_exact_thresh"]) == (
        100.0, 50.0, 0.0)


def test_v2_answerable_question_whose_answers_normalise_to_nothing():
    # Gold "The" is dropped, leaving gold "": "" scores 1 and the question still
    # counts as answerable; turned into "" by the threshold it scores 0.0.
    data = _squad(("q", ["The"]))["data"]
    assert evaluate_v2(data, {"q": ""}) == {
        "exact": 100.0, "f1": 100.0, "total": 1,
        "HasAns_exact": 100.0, "HasAns_f1": 100.0, "HasAns_total": 1}
    assert evaluate_v2(data, {"q": ""}, {"q": 0.9}, na_prob_thresh=0.5)["exact"] == 0.0
    # Beside a real answer, "The" is simply dropped, so "" no longer matches it.
    mixed = _squad(("q", ["Paris", "The"]))["data"]
    assert evaluate_v2(mixed, {"q": ""})["exact"] == 0.0
    assert evaluate_v1(mixed, {"q": ""})["exact_match"] == 100.0  # v1.1 keeps "The"


def test_v2_missing_prediction_scores_zero(capsys):
    preds = _fixture("v2_pred.json")
    del preds["v2-sponsor"]
    probs = _fixture("v2_na_prob.json")
    scores = evaluate_v2(_fixture("v2_dev.json")["data"], preds, na_probs=probs)
    # team 1 + place 1/2 over 5; sponsor scores 0 and is left out of the search:
    # start 1 (stadium); team +1 -> 2 (.1); date; place +.5 -> 2.5 (.5); stadium -1.
    assert scores == pytest.approx({
        "exact": 20.0, "f1": 30.0, "total": 5,
        "HasAns_exact": 100 / 3, "HasAns_f1": 50.0, "HasAns_total": 3,
        "NoAns_exact": 0.0, "NoAns_f1": 0.0, "NoAns_total": 2,
        "best_exact": 40.0, "best_exact_thresh": 0.1, "best_f1": 50.0, "best_f1_thresh": 0.5})
    assert capsys.readouterr().err == "Missing prediction for v2-sponsor\n"


def test_threshold_keeps_the_files_number_type():
    data = _squad(("yes", ["Paris"]))["data"]
    best = find_best_threshold({"yes": "Paris"}, {"yes": 1}, data)
    assert best["best_exact_thresh"] == 1 and isinstance(best["best_exact_thresh"], int)


@pytest.mark.parametrize("squad_json,version", [
    (_squad(("q", ["a"]), version="1.1"), "1.1"),
    (_squad(("q", ["a"]), version="v2.0"), "2.0"),
    ({"data": _squad(("q", ["a"]))["data"]}, "1.1"),
    ({"data": [{"paragraphs": [{"qas": [
        {"id": "q", "answers": [], "is_impossible": True}]}]}]}, "2.0"),
])
def test_version_detection(squad_json, version):
    assert squad_eval.squad_version(squad_json) == version


@pytest.mark.parametrize("dataset,message", [
    ({"data": []}, "'data' must be an array of articles, got an object"),
    ([{"title": "t"}], "data[0]: missing field 'paragraphs'"),
    ([{"paragraphs": [{"qas": [{"id": 3, "answers": []}]}]}],
     "data[0].paragraphs[0].qas[0].id must be a string, got a number"),
    ([{"paragraphs": [{"qas": [{"id": "q", "answers": ["x"]}]}]}],
     "data[0].paragraphs[0].qas[0].answers[0] must be an object, got a string"),
    (_squad(("q", ["a"]), ("q", ["b"]))["data"],
     "data[0].paragraphs[0].qas[1]: question id 'q' already used at data[0].paragraphs[0].qas[0]"),
])
def test_malformed_data_names_the_field(dataset, message):
    with pytest.raises(ValueError) as e:
        evaluate_v2(dataset, {})
    assert str(e.value) == message


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "albert_tf.tasks.squad.evaluate", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_cli_v1_prints_one_json_line():
    run = _cli(os.path.join(SQUAD, "v1_dev.json"), os.path.join(SQUAD, "v1_pred.json"))
    assert run.returncode == 0, run.stderr
    scores = json.loads(run.stdout)
    assert run.stdout == json.dumps(scores) + "\n"  # json.dumps defaults: one line
    assert list(scores) == ["exact_match", "f1"] and scores["exact_match"] == 25.0
    assert "Unanswered question v1-height will receive score 0." in run.stderr


def test_cli_v2_prints_indented_json_with_official_flags():
    run = _cli(os.path.join(SQUAD, "v2_dev.json"), os.path.join(SQUAD, "v2_pred.json"),
               "--na-prob-file", os.path.join(SQUAD, "v2_na_prob.json"))
    assert run.returncode == 0, run.stderr
    assert run.stdout == (
        '{\n  "exact": 40.0,\n  "f1": 50.0,\n  "total": 5,\n'
        '  "HasAns_exact": 33.333333333333336,\n  "HasAns_f1": 50.0,\n  "HasAns_total": 3,\n'
        '  "NoAns_exact": 50.0,\n  "NoAns_f1": 50.0,\n  "NoAns_total": 2,\n'
        '  "best_exact": 60.0,\n  "best_exact_thresh": 0.1,\n'
        '  "best_f1": 70.0,\n  "best_f1_thresh": 0.5\n}\n')


def test_cli_out_file_and_underscore_flags(tmp_path, capsys):
    out = tmp_path / "eval.json"
    assert squad_eval.main([os.path.join(SQUAD, "v2_dev.json"),
                            os.path.join(SQUAD, "v2_pred.json"),
                            f"--na_prob_file={os.path.join(SQUAD, 'v2_na_prob.json')}",
                            "--na_prob_thresh=0.4", f"--out_file={out}"]) == 0
    assert capsys.readouterr().out == ""
    text = out.read_text()
    assert "\n" not in text and json.loads(text)["exact"] == 60.0


def test_cli_missing_file_is_one_line_without_traceback(tmp_path):
    missing = str(tmp_path / "nope.json")
    run = _cli(missing, os.path.join(SQUAD, "v1_pred.json"))
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr == f"error: {missing}: No such file or directory\n"


def test_cli_unwritable_out_file_is_named(tmp_path, capsys):
    out = str(tmp_path / "no_such_folder" / "eval.json")
    assert squad_eval.main([os.path.join(SQUAD, "v1_dev.json"),
                            os.path.join(SQUAD, "v1_pred.json"), "-o", out]) == 1
    assert capsys.readouterr().err.endswith(f"error: {out}: No such file or directory\n")


def _write(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


@pytest.mark.parametrize("data,preds,na_probs,message", [
    ("not json", {}, None, "data.json:1:1: invalid JSON"),
    ([], {}, None, "data.json: not a SQuAD file: expected an object with a 'data' array"),
    (_squad(("q", ["a"])), ["a"], None, "pred.json: predictions must be an object mapping "
                                         "each question id to a string, got an array"),
    (_squad(("q", ["a"])), {"q": 1}, None,
     "pred.json: predictions: the value for 'q' must be a string, got a number"),
    (_squad(("q", ["a"]), ("r", [])), {"q": "a", "r": ""}, {"q": 0.5},
     "na.json: no-answer probability missing for 1 predicted question(s): r"),
    (_squad(("q", ["a"])), {"q": "a"}, {"q": "high"},
     "na.json: no-answer probabilities: the value for 'q' must be a number, got a string"),
    (_squad(("q", ["a"]), version="1.1"), {"q": "a"}, {"q": 0.5},
     "data.json: is SQuAD v1.1; --na_prob_file and --na_prob_thresh apply to v2.0 only"),
])
def test_cli_bad_input_names_the_file(tmp_path, capsys, data, preds, na_probs, message):
    args = [_write(tmp_path, "data.json", data), _write(tmp_path, "pred.json", preds)]
    if na_probs is not None:
        args.append(f"--na_prob_file={_write(tmp_path, 'na.json', na_probs)}")
    assert squad_eval.main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {tmp_path}/") and message in err and err.count("\n") == 1
