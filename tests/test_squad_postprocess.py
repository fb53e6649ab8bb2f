"""SQuAD n-best decoding, null odds, thresholds and files (tasks/squad/postprocess.py).

Most tests decode hand-made logits over hand-made windows of the context
"zero one two three four five" (one word a token): window 0 holds tokens
0-3, window 1 tokens 2-5, each as [CLS] q [SEP] t t t t [SEP] <pad> (length
9, context at positions 3-6). Max context: tokens 0-2 in window 0 (positions
3, 4, 5), tokens 3-5 in window 1 (positions 4, 5, 6).
"""

import json
import math
import os
import re

import numpy as np
import pytest

from albert_tf.data.features import Features
from conftest import FIXTURES
from albert_tf.tasks.squad import evaluate as squad_eval
from albert_tf.tasks.squad.data import SquadExample, featurize, read_squad
from albert_tf.tasks.squad.postprocess import (apply_threshold, best_null_threshold, decode_spans,
                                     write_prediction_files)
from squad_reference import max_context

CONTEXT = "zero one two three four five"
LENGTH, C0 = 9, 3  # window length; first context position
DATA = os.path.join(FIXTURES, "squad_data")


def _hand_features(windows, context=CONTEXT):
    """Features of windows `[(question_index, doc_start, doc_length)]` over the words of `context`."""
    words = np.array([(m.start(), m.end()) for m in re.finditer(r"\S+", context)],
                     int).reshape(-1, 2)
    n = len(windows)
    a = {"token_start_char": np.full((n, LENGTH), -1, np.int32),
         "token_end_char": np.full((n, LENGTH), -1, np.int32),
         "token_is_max_context": np.zeros((n, LENGTH), np.int8),
         "p_mask": np.ones((n, LENGTH), np.int32),
         "question_index": np.array([w[0] for w in windows], np.int32)}
    for q in set(a["question_index"].tolist()):
        rows = [r for r, w in enumerate(windows) if w[0] == q]
        best = max_context([windows[r][1:] for r in rows], len(words))
        for i, r in enumerate(rows):
            start, count = windows[r][1:]
            a["token_start_char"][r, C0:C0 + count] = words[start:start + count, 0]
            a["token_end_char"][r, C0:C0 + count] = words[start:start + count, 1]
            a["token_is_max_context"][r, C0:C0 + count] = best[i, start:start + count]
            a["p_mask"][r, [0, *range(C0, C0 + count)]] = 0
    a["token_ids"] = np.zeros((n, LENGTH), np.int32)
    return Features(a, np.full(n, LENGTH - 1, np.int32))


def _logits(features, values):
    """(N, LENGTH) float32: 0 on [CLS] and context, -1e30 where p_mask, -inf on the pad;
    then `values` {(window, position): logit}."""
    out = np.where(features.arrays["p_mask"] == 1, np.float32(-1e30), np.float32(0))
    out[:, LENGTH - 1] = -np.inf
    for (w, p), v in values.items():
        out[w, p] = v
    return out


def _two_windows():
    examples = [SquadExample("q", "?", CONTEXT)]
    return examples, _hand_features([(0, 0, 4), (0, 2, 4)])


def test_hand_features_max_context():
    _, features = _two_windows()
    assert features.arrays["token_is_max_context"].tolist() == [
        [0, 0, 0, 1, 1, 1, 0, 0, 0], [0, 0, 0, 0, 1, 1, 1, 0, 0]]


def test_span_head_cross_window_and_max_context():
    examples, features = _two_windows()
    # Window 0, position 6 is token 3 ("three") but not its max-context window:
    # its start logit 10 must not count. Window 1 holds "three four" = 4 + 4.
    start = _logits(features, {(0, 6): 10.0, (1, 4): 4.0})
    end = _logits(features, {(0, 6): 5.0, (1, 5): 4.0, (1, 4): 1.0, (0, 0): 2.0, (1, 0): 0.5})
    start[0, 0], start[1, 0] = 1.0, 0.5
    predictions, nbest, null_odds = decode_spans(
        examples, features, {"start_logits": start, "end_logits": end}, n_best_size=3)
    assert predictions == {"q": "three four"}
    best = nbest["q"]
    # Next: "three" (4 + 1) from window 1, then "zero one two three" etc. (0 + 5) from window 0
    # tie at 5, kept in window order.
    assert [e["text"] for e in best] == ["three four", "zero one two three", "one two three"]
    assert [e["start_logit"] + e["end_logit"] for e in best] == [8.0, 5.0, 5.0]
    assert best[0]["start_char"] == CONTEXT.index("three")
    assert best[0]["end_char"] == len("zero one two three four")
    expected = np.exp([8.0, 5.0, 5.0]) / np.exp([8.0, 5.0, 5.0]).sum()
    assert np.allclose([e["probability"] for e in best], expected)
    assert math.isclose(sum(e["probability"] for e in best), 1.0)
    # Null: min over windows of start[0] + end[0] = min(3.0, 1.0), minus the best span.
    assert null_odds == {"q": 1.0 - 8.0}


def test_span_head_max_answer_length_and_end_before_start():
    examples, features = _two_windows()
    # The best pair by logits, start "two" (5) and end "zero" (9), is reversed.
    start = _logits(features, {(0, 5): 5.0, (0, 4): 1.0, (0, 3): -5.0})
    end = _logits(features, {(0, 3): 9.0, (0, 4): 2.0, (0, 6): 3.0})
    outputs = {"start_logits": start, "end_logits": end}
    predictions, nbest, _ = decode_spans(examples, features, outputs, max_answer_length=30)
    assert predictions["q"] == "two three"  # 5 + 3
    predictions, nbest, _ = decode_spans(examples, features, outputs, max_answer_length=1)
    assert predictions["q"] == "two"        # 5 + 0: "two three" is 2 tokens
    assert all(len(e["text"].split()) == 1 for e in nbest["q"])
    assert all(e["start_char"] <= e["end_char"] for e in nbest["q"])
    # Every valid one-token span once: 6 tokens.
    assert sorted(e["text"] for e in nbest["q"]) == sorted(CONTEXT.split())


def test_n_best_size_and_probabilities():
    examples, features = _two_windows()
    rng = np.random.default_rng(3)
    outputs = {k: _logits(features, {(w, p): rng.normal() for w in (0, 1) for p in range(3, 7)})
               for k in ("start_logits", "end_logits")}
    _, nbest, _ = decode_spans(examples, features, outputs, n_best_size=4)
    scores = [e["start_logit"] + e["end_logit"] for e in nbest["q"]]
    assert len(scores) == 4 and scores == sorted(scores, reverse=True)
    assert math.isclose(sum(e["probability"] for e in nbest["q"]), 1.0)
    _, everything, _ = decode_spans(examples, features, outputs, n_best_size=100)
    # Starts 0-2 end in window 0 (4 + 3 + 2 spans), starts 3-5 in window 1 (3 + 2 + 1).
    assert len(everything["q"]) == 15
    assert [e["text"] for e in everything["q"][:4]] == [e["text"] for e in nbest["q"]]


def test_whitespace_only_spans_take_no_place_in_a_window():
    examples, features = _two_windows()
    # Window 0's position 5 now spans only the space before "two": the best
    # span by score, (5, 5), has no text, so the window's two best are both real.
    for name, char in (("token_start_char", 8), ("token_end_char", 9)):
        features.arrays[name][0, 5] = char
    outputs = {k: _logits(features, {(0, 5): 10.0}) for k in ("start_logits", "end_logits")}
    predictions, nbest, _ = decode_spans(examples, features, outputs, n_best_size=2)
    # Ties at 10 (a start, then an end, in position order): (3, 5) then (4, 5).
    assert [(e["text"], e["start_char"], e["end_char"]) for e in nbest["q"]] == [
        ("zero one", 0, 8), ("one", 5, 8)]
    assert predictions == {"q": "zero one"}


def test_character_offsets_count_code_points():
    context = "zero \U0001F642\U0001F642\u3000two three four five"  # an ideographic space
    examples = [SquadExample("q", "?", context)]
    features = _hand_features([(0, 0, 4)], context=context)
    features.arrays["token_end_char"][0, 4] += 1  # the emoji token takes the space too
    outputs = {k: _logits(features, {(0, 4): 5.0}) for k in ("start_logits", "end_logits")}
    predictions, nbest, _ = decode_spans(examples, features, outputs, n_best_size=3)
    assert predictions == {"q": "\U0001F642\U0001F642"}
    assert [(e["text"], e["start_char"], e["end_char"]) for e in nbest["q"]] == [
        ("\U0001F642\U0001F642", 5, 7), ("zero \U0001F642\U0001F642", 0, 7),
        ("\U0001F642\U0001F642\u3000two", 5, 11)]


def _v2_outputs():
    """Two windows of question 0, one of question 1 (window 2 = window 0's tokens)."""
    return {
        "start_top_index": np.array([[5, 1], [6, 3], [3, 4]]),
        "start_top_log_probs": np.array([[-0.5, -1.0], [-1.5, -0.1], [-0.2, -0.3]], np.float32),
        # Per start s: ends [s*2], [s*2 + 1].
        "end_top_index": np.array([[6, 4, 5, 6], [6, 8, 4, 5], [3, 4, 4, 5]]),
        "end_top_log_probs": np.array([[-0.2, -0.1, -0.3, -0.4], [-0.5, -0.05, -0.01, -0.02],
                                       [-0.1, -0.2, -0.3, -0.4]], np.float32),
        "cls_logits": np.array([0.3, -1.2, 2.0], np.float32)}


def test_v2_head_candidates_and_null_odds():
    examples = [SquadExample("a", "?", CONTEXT), SquadExample("b", "?", CONTEXT)]
    features = _hand_features([(0, 0, 4), (0, 2, 4), (1, 0, 4)])
    predictions, nbest, null_odds = decode_spans(examples, features, _v2_outputs(), head="beam")
    # Valid in window 0: start 5 ("two") with end 6 ("three"); end 4 is before
    # it, start 1 is in the question. Window 1: start 6 ("five") with end 6;
    # end 8 is padding; start 3 is token 2, not max-context there.
    assert [(e["text"], round(e["start_log_prob"] + e["end_log_prob"], 5))
            for e in nbest["a"]] == [("two three", -0.7), ("five", -2.0)]
    assert math.isclose(nbest["a"][0]["probability"], 1 / (1 + math.exp(-1.3)), rel_tol=1e-6)
    assert set(nbest["a"][0]) == {"text", "probability", "start_log_prob", "end_log_prob",
                                  "start_char", "end_char"}
    assert [e["text"] for e in nbest["b"]] == ["zero", "zero one", "one", "one two"]
    assert predictions == {"a": "two three", "b": "zero"}
    assert null_odds == pytest.approx({"a": -1.2, "b": 2.0})  # min cls_logits per question
    predictions, _, _ = decode_spans(examples, features, _v2_outputs(), head="beam",
                                     max_answer_length=1)
    assert predictions == {"a": "five", "b": "zero"}


def test_reversed_span_is_invalid_even_with_shared_character_spans():
    # "½" becomes three tokens with the same span; here positions 5 and 6 of a
    # window both span "two", so the reversed pair (6, 5) would read "two".
    examples = [SquadExample("q", "?", CONTEXT)]
    features = _hand_features([(0, 0, 4)])
    for name in ("token_start_char", "token_end_char"):
        features.arrays[name][0, 6] = features.arrays[name][0, 5]
    outputs = {"start_top_index": np.array([[6]]), "start_top_log_probs": np.zeros((1, 1)),
               "end_top_index": np.array([[5, 6]]), "end_top_log_probs": np.array([[0.0, -1.0]]),
               "cls_logits": np.zeros(1)}
    _, nbest, _ = decode_spans(examples, features, outputs, head="beam")
    assert [(e["text"], e["end_log_prob"]) for e in nbest["q"]] == [("two", -1.0)]


def test_empty_and_duplicate_texts_are_skipped(tokenizer_model):
    # "Café  über": the tokenizer gives "▁cafe", "▁" (empty span at "ü"), "uber".
    context = "Café  über naïve."
    examples = [SquadExample("q", "Which?", context)]
    features, _ = featurize(examples, tokenizer_model)
    starts = features.arrays["token_start_char"][0]
    ends = features.arrays["token_end_char"][0]
    empty = int(np.flatnonzero((starts >= 0) & (starts == ends))[0])
    start = np.where(features.arrays["p_mask"][0] == 1, -1e30, 0.0).astype(np.float32)[None]
    end = start.copy()
    start[0, empty], end[0, empty], start[0, empty + 1], end[0, empty + 1] = 9, 9, 8, 8
    predictions, nbest, _ = decode_spans(examples, features,
                                         {"start_logits": start, "end_logits": end})
    texts = [e["text"] for e in nbest["q"]]
    assert predictions["q"] == "über" and texts[0] == "über" and len(set(texts)) == len(texts)
    assert "" not in texts
    # ("▁cafe", "▁") covers "Café  ": stripped, as the reference strips.
    assert "Café" in texts and all(t == t.strip() for t in texts)
    assert all(context[e["start_char"]:e["end_char"]] == e["text"] for e in nbest["q"])
    assert nbest["q"][0]["start_logit"] + nbest["q"][0]["end_logit"] == 17  # ("▁", "uber")


@pytest.fixture(scope="module")
def tokenizer_model():
    from albert_tf.tokenizer import HostTokenizer

    return HostTokenizer(os.path.join(FIXTURES, "spm", "albert_30k_clean.model"))


def _read(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _gold_logits(features):
    """Span-head outputs that point at each window's labelled span (or [CLS])."""
    a = features.arrays
    start = np.where(a["p_mask"] == 1, -1e30, 0.0).astype(np.float32)
    end = start.copy()
    rows = np.arange(len(features))
    start[rows, a["start_positions"]] += 6.0
    end[rows, a["end_positions"]] += 6.0
    return {"start_logits": start, "end_logits": end}


def test_v1_files_score_with_the_official_metrics(tmp_path, tokenizer_model):
    path = os.path.join(DATA, "v1.json")
    examples = [e for e in read_squad(path) if e.qid != "q-shifted"]
    features, _ = featurize(examples, tokenizer_model)
    predictions, nbest, null_odds = decode_spans(examples, features, _gold_logits(features))
    paths = write_prediction_files(str(tmp_path), predictions, nbest)
    assert sorted(os.listdir(tmp_path)) == ["nbest_predictions.json", "predictions.json"]
    with open(paths[0], encoding="utf-8") as f:
        written = squad_eval.check_predictions(json.load(f))
    assert written["q-dessert"] == "crème brûlée" and written["q-snowman"] == "☃ daily"
    dataset = _read(path)["data"]
    # 5 of 6 questions right; "q-shifted" has no prediction and scores 0.
    assert squad_eval.evaluate_v1(dataset, written) == pytest.approx(
        {"exact_match": 500 / 6, "f1": 500 / 6})
    with open(paths[1], encoding="utf-8") as f:
        assert json.load(f) == nbest


def test_v2_files_threshold_and_cli(tmp_path, tokenizer_model):
    path = os.path.join(DATA, "v2.json")
    examples = read_squad(path)
    features, _ = featurize(examples, tokenizer_model, max_seq_length=64, max_query_length=16)
    predictions, nbest, null_odds = decode_spans(examples, features, _gold_logits(features))
    assert predictions["n-name"] == "Normandy"
    assert predictions["n-impossible"] != ""  # the best span; the threshold empties it
    assert null_odds["n-impossible"] > 0 > max(null_odds["n-name"], null_odds["n-when"])
    dataset = _read(path)["data"]
    threshold = best_null_threshold(predictions, null_odds, examples)
    assert threshold == max(null_odds["n-name"], null_odds["n-when"])
    final = apply_threshold(predictions, null_odds, threshold)
    assert final["n-impossible"] == "" and final["n-name"] == "Normandy"
    assert squad_eval.evaluate_v2(dataset, final)["exact"] == 100.0
    files = write_prediction_files(str(tmp_path), predictions, nbest, null_odds)
    out = tmp_path / "eval.json"
    assert squad_eval.main([path, files[0], "--na_prob_file", files[2], "--na_prob_thresh",
                            str(threshold), "--out_file", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["exact"] == result["best_f1"] == 100.0
    assert result["best_f1_thresh"] == pytest.approx(threshold)


def test_no_valid_span():
    examples = [SquadExample("q", "?", "")]
    features = _hand_features([(0, 0, 0)], context="")
    outputs = {k: _logits(features, {(0, 0): 1.5}) for k in ("start_logits", "end_logits")}
    predictions, nbest, null_odds = decode_spans(examples, features, outputs)
    # The reference's nonce entry scores -1e6 + -1e6: no answer by a wide margin.
    assert predictions == {"q": ""} and nbest == {"q": []} and null_odds == {"q": 3.0 + 2e6}


def test_apply_threshold_is_strict():
    predictions = {"a": "x", "b": "y", "c": "z"}
    odds = {"a": -1.0, "b": 0.5, "c": 0.6}
    assert apply_threshold(predictions, odds, 0.5) == {"a": "x", "b": "y", "c": ""}
    with pytest.raises(ValueError, match=r"no null odds for 1 question\(s\), e.g. \['c'\]"):
        apply_threshold(predictions, {"a": 0.0, "b": 0.0}, 0.0)


def test_threshold_needs_labels():
    with pytest.raises(ValueError, match=r"have no gold answers.*\['t'\]"):
        best_null_threshold({"t": "x"}, {"t": 0.0}, [SquadExample("t", "?", "c")])


def test_write_rejects_non_finite_odds(tmp_path):
    with pytest.raises(ValueError, match=r"not finite for \['a'\]"):
        write_prediction_files(str(tmp_path), {"a": ""}, {"a": []}, {"a": float("inf")})
    assert os.listdir(tmp_path) == []


def test_decode_input_errors():
    examples, features = _two_windows()
    good = {"start_logits": _logits(features, {}), "end_logits": _logits(features, {})}
    with pytest.raises(ValueError, match="unknown head 'xlnet'"):
        decode_spans(examples, features, good, head="xlnet")
    with pytest.raises(ValueError, match=r"head 'beam' needs outputs \['start_top_log_probs'"):
        decode_spans(examples, features, good, head="beam")
    with pytest.raises(ValueError, match="'end_logits'\\] has 1 rows, features have 2"):
        decode_spans(examples, features, {**good, "end_logits": good["end_logits"][:1]})
    more = examples + [SquadExample("lost", "?", CONTEXT)]
    with pytest.raises(ValueError, match=r"1 question\(s\) have no window, e.g. \['lost'\]"):
        decode_spans(more, features, good)
