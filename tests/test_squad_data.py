"""SQuAD reading and sliding-window featurization (tasks/squad/data.py).

Fixtures (tests/fixtures/squad_data): v1.json (6 questions on 2 paragraphs:
accents, "1990," answered "1990", an answer with different spacing, an
answer_start shifted by 3, a character the vocabulary lacks) and v2.json (2
answerable questions, 1 unanswerable with a plausible answer).
"""

import copy
import json
import logging
import os

import numpy as np
import pytest

import squad_reference
from conftest import FIXTURES
from albert_tf.tasks.squad.data import SquadExample, answer_char_span, featurize, read_squad
from squad_reference import doc_windows, max_context

DATA = os.path.join(FIXTURES, "squad_data")
SPM = os.path.join(FIXTURES, "spm", "albert_30k_clean.model")
LONG = " ".join(f"Sentence {i} tells of the city number {i}, its river and its king."
                for i in range(12))


@pytest.fixture(scope="module")
def tokenizer():
    from albert_tf.tokenizer import HostTokenizer

    return HostTokenizer(SPM)


def _answer_text(features, row, example):
    """The context text of the labelled span of window `row`."""
    a = features.arrays
    start, end = a["start_positions"][row], a["end_positions"][row]
    return example.context[a["token_start_char"][row, start]:a["token_end_char"][row, end]]


# -- Reading ----------------------------------------------------------------------

def test_read_v1_and_v2():
    v1 = read_squad(os.path.join(DATA, "v1.json"))
    assert [e.qid for e in v1] == ["q-born", "q-founded", "q-father", "q-shifted",
                                   "q-dessert", "q-snowman"]
    founded = v1[1]
    assert founded.answers == (("1990", 109), ("in 1990", 106))
    assert (founded.title, founded.is_impossible, founded.plausible_answers) == (
        "Beyoncé", False, ())
    assert v1[4].context.startswith("The café") and v1[4].title == "Café"
    v2 = read_squad(os.path.join(DATA, "v2.json"))
    impossible = v2[2]
    assert impossible.is_impossible and impossible.answers == ()
    assert impossible.plausible_answers == (("The Normans", 0),)


def _write_broken(tmp_path, change):
    with open(os.path.join(DATA, "v1.json"), encoding="utf-8") as f:
        squad = json.load(f)
    change(squad)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(squad), encoding="utf-8")
    return str(path)


def _qa(squad, article=0, qa=0):
    return squad["data"][article]["paragraphs"][0]["qas"][qa]


@pytest.mark.parametrize("change,message", [
    (lambda s: _qa(s, 1, 1)["answers"][0].update(answer_start="7"),
     "data[1].paragraphs[0].qas[1].answers[0].answer_start: expected an integer, got a string"),
    (lambda s: _qa(s, 0, 2)["answers"][0].update(answer_start=True),
     "data[0].paragraphs[0].qas[2].answers[0].answer_start: expected an integer, got a boolean"),
    (lambda s: _qa(s, 0, 0)["answers"][0].update(answer_start=-1),
     "answers[0].answer_start: expected a non-negative integer, got -1"),
    (lambda s: _qa(s, 0, 3).pop("id"), "data[0].paragraphs[0].qas[3]: missing field 'id'"),
    (lambda s: _qa(s, 0, 1).update(question=None),
     "data[0].paragraphs[0].qas[1].question: expected a string, got null"),
    (lambda s: s["data"][1]["paragraphs"][0].update(qas={}),
     "data[1].paragraphs[0].qas: expected an array, got an object"),
    (lambda s: s["data"][1].update(paragraphs=[7]), "data[1].paragraphs[0]: expected an object"),
    (lambda s: _qa(s, 0, 0).update(is_impossible="no"),
     "data[0].paragraphs[0].qas[0].is_impossible: expected a boolean, got a string"),
    (lambda s: _qa(s, 0, 0).update(is_impossible=True),
     "qas[0].is_impossible: true, but the question has 1 answer(s)"),
    (lambda s: _qa(s, 1, 0).update(id="q-born"),
     "data[1].paragraphs[0].qas[0].id: 'q-born' is already used by data[0].paragraphs[0].qas[0]"),
    (lambda s: s.pop("data"), "not a SQuAD file: expected an object with a 'data' array"),
])
def test_read_errors_name_file_and_field(tmp_path, change, message):
    path = _write_broken(tmp_path, change)
    with pytest.raises(ValueError) as info:
        read_squad(path)
    assert str(info.value).startswith(f"{path}: ")
    assert message in str(info.value)


def test_read_invalid_json_names_file_and_line(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"data": [\n  {"paragraphs": ]}', encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^{path}:2:\d+: invalid JSON"):
        read_squad(str(path))


# -- Answers ----------------------------------------------------------------------

@pytest.mark.parametrize("text,start,expected", [
    ("1990", 18, (18, 22)),
    ("Mathew Knowles", 34, (34, 50)),    # the context has "Mathew   Knowles"
    (" 1990", 17, (18, 22)),              # a stray leading space in the answer
    ("1990", 19, None),                   # shifted start
    ("1991", 18, None),
    ("   ", 17, None),
])
def test_answer_char_span(text, start, expected):
    context = "It was founded in 1990, by father Mathew   Knowles."
    assert answer_char_span(context, text, start) == expected


def test_answers_map_to_tokens(tokenizer):
    examples = read_squad(os.path.join(DATA, "v1.json"))
    features, _ = featurize(examples, tokenizer, is_training=False)
    a = features.arrays
    assert np.array_equal(a["question_index"], np.arange(6))  # one window each
    texts = [_answer_text(features, i, e) for i, e in enumerate(examples)]
    # "1990" of "1990,", the accented "crème brûlée", "☃" (<unk>), the spacing
    # of "father  Mathew   Knowles" as the context has it.
    assert texts[:3] == ["Houston, Texas", "1990", "her father  Mathew   Knowles"]
    assert texts[4:] == ["crème brûlée", "☃ daily"]
    ids = a["token_ids"][5, a["start_positions"][5]:a["end_positions"][5] + 1]
    assert tokenizer.unk_id in ids
    assert not a["is_impossible"].any()


def test_training_skips_misplaced_answers_and_eval_keeps_them(tokenizer, caplog):
    examples = read_squad(os.path.join(DATA, "v1.json"))
    with caplog.at_level(logging.WARNING, logger="albert_tf.tasks.squad.data"):
        train, _ = featurize(examples, tokenizer, is_training=True)
    assert sorted(set(train.arrays["question_index"].tolist())) == [0, 1, 2, 4, 5]
    assert "'q-shifted'" in caplog.text and "skipped 1 of 6" in caplog.text
    assert train.label_keys == ("start_positions", "end_positions", "is_impossible")
    evaluation, _ = featurize(examples, tokenizer)
    assert 3 in evaluation.arrays["question_index"] and evaluation.label_keys == ()


def test_training_needs_an_answer_or_is_impossible(tokenizer):
    example = SquadExample("q0", "Who?", "Nobody knows.")
    with pytest.raises(ValueError, match="'q0' has no answer and is not marked is_impossible"):
        featurize([example], tokenizer, is_training=True)
    features, _ = featurize([example], tokenizer)  # a test set: placeholder labels
    assert features.arrays["is_impossible"].tolist() == [1]


# -- Windows ----------------------------------------------------------------------

@pytest.mark.parametrize("num_tokens,max_tokens,stride,expected", [
    (10, 4, 3, [(0, 4), (3, 4), (6, 4)]),
    (11, 4, 3, [(0, 4), (3, 4), (6, 4), (9, 2)]),
    (10, 4, 6, [(0, 4), (4, 4), (8, 2)]),     # a stride above the window: no gap
    (3, 4, 2, [(0, 3)]),
    (0, 4, 2, [(0, 0)]),                      # an empty context still gets a window
])
def test_doc_windows(num_tokens, max_tokens, stride, expected):
    assert doc_windows(num_tokens, max_tokens, stride) == expected


def test_max_context_hand_worked():
    windows = doc_windows(12, 5, 3)
    assert windows == [(0, 5), (3, 5), (6, 5), (9, 3)]
    # Token 4: window 0 gives min(4, 0) + 0.05, window 1 min(1, 2) + 0.05 -> 1.
    # Token 10: window 2 gives min(4, 0) + .05, window 3 min(1, 1) + .03 -> 3.
    best = np.argmax(max_context(windows, 12), axis=0)
    assert best.tolist() == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3]
    # A tie: token 3 scores min(3, 1) in window 0 and min(1, 3) in window 1,
    # both of length 5; the first window wins, as the reference's strict ">".
    tie = max_context([(0, 5), (2, 5)], 7)
    assert tie[:, 3].tolist() == [True, False]


def test_long_context_windows(tokenizer):
    question = SquadExample("q", "Which king?", LONG)
    features, windows = featurize([question], tokenizer, max_seq_length=40, doc_stride=11,
                                  max_query_length=3)
    a, context = features.arrays, tokenizer.encode_with_offsets(LONG)
    ids, starts, ends = (np.array(x) for x in context)
    query = len(tokenizer.encode("Which king?")[:3])
    assert query == 3 and len(windows) > 3
    assert [w.doc_start for w in windows] == [11 * i for i in range(len(windows))]
    assert windows[-1].doc_start + windows[-1].doc_length == len(ids)
    covered = np.zeros(len(ids), bool)
    for row, w in enumerate(windows):
        c0, c1 = query + 2, query + 2 + w.doc_length
        if row < len(windows) - 1:
            assert w.doc_length == 40 - query - 3
        assert features.lengths[row] == c1 + 1
        assert a["token_ids"][row, 0] == tokenizer.cls_id
        assert a["token_ids"][row, query + 1] == a["token_ids"][row, c1] == tokenizer.sep_id
        assert np.all(a["token_ids"][row, c1 + 1:] == tokenizer.pad_id)
        span = slice(w.doc_start, w.doc_start + w.doc_length)
        assert np.array_equal(a["token_ids"][row, c0:c1], ids[span])
        assert np.array_equal(a["token_start_char"][row, c0:c1], starts[span])
        assert np.array_equal(a["token_end_char"][row, c0:c1], ends[span])
        outside = np.r_[0:c0, c1:40]
        assert np.all(a["token_start_char"][row, outside] == -1)
        assert np.all(a["token_end_char"][row, outside] == -1)
        assert a["segment_ids"][row].tolist() == [0] * c0 + [1] * (c1 + 1 - c0) + [0] * (39 - c1)
        assert a["p_mask"][row].tolist() == [0] + [1] * (c0 - 1) + [0] * (c1 - c0) + [1] * (
            40 - c1)
        covered[span] = True
    assert covered.all()
    # Every context token is max-context in exactly one window.
    per_token = np.zeros(len(ids), int)
    for row, w in enumerate(windows):
        per_token[w.doc_start:w.doc_start + w.doc_length] += a["token_is_max_context"][
            row, query + 2:query + 2 + w.doc_length]
    assert np.all(per_token == 1)


def test_offsets_give_back_the_text(tokenizer):
    context = "Zoë's  café, in 1990,  sold ½ crème brûlée ☃ to    everyone."
    features, _ = featurize([SquadExample("q", "What?", context)], tokenizer)
    a = features.arrays
    spans = [(s, e) for s, e in zip(a["token_start_char"][0], a["token_end_char"][0]) if s >= 0]
    texts = [context[s:e] for s, e in spans]
    assert "".join(texts).replace("½", "") == "".join(context.split()).replace("½", "")
    assert texts[:4] == ["Zoë", "'", "s", "café"] and "☃" in texts


def test_unanswerable_and_outside_window_label_cls(tokenizer):
    answer = "the city number 10"
    answerable = SquadExample("a", "Which city?", LONG, ((answer, LONG.index(answer)),))
    impossible = SquadExample("b", "Which queen?", LONG, is_impossible=True,
                              plausible_answers=((answer, LONG.index(answer)),))
    features, windows = featurize([answerable, impossible], tokenizer, max_seq_length=40,
                                  doc_stride=11, max_query_length=5, is_training=True)
    a = features.arrays
    rows = np.flatnonzero(a["question_index"] == 0)
    inside = [r for r in rows if not a["is_impossible"][r]]
    assert inside and len(inside) < len(rows)  # some windows hold it, others do not
    for r in rows:
        if r in inside:
            assert _answer_text(features, r, answerable) == answer
        else:
            assert (a["start_positions"][r], a["end_positions"][r]) == (0, 0)
    # A window holding only the answer's first tokens is labelled [CLS] too.
    tokens = np.array(tokenizer.encode_with_offsets(LONG)[1])
    first = np.searchsorted(tokens, LONG.index(answer))
    partial = [r for r in rows if windows[r].doc_start <= first
               < windows[r].doc_start + windows[r].doc_length <= first + 3]
    assert partial and all(a["is_impossible"][r] for r in partial)
    rows = a["question_index"] == 1
    assert a["is_impossible"][rows].all() and not a["start_positions"][rows].any()
    assert not a["end_positions"][rows].any()


def test_empty_context_gets_one_window(tokenizer):
    features, windows = featurize([SquadExample("e", "Why?", "")], tokenizer, max_seq_length=8,
                                  max_query_length=4)
    assert windows == [(0, 0, 0, 2)] and features.lengths.tolist() == [5]
    assert features.arrays["token_ids"][0, :5].tolist() == [
        tokenizer.cls_id, *tokenizer.encode("Why?"), tokenizer.sep_id, tokenizer.sep_id]
    assert features.arrays["p_mask"][0].tolist() == [0] + [1] * 7


def test_arrays_dtypes_and_truncated_question(tokenizer):
    examples = read_squad(os.path.join(DATA, "v2.json"))
    features, windows = featurize(examples, tokenizer, max_seq_length=64, max_query_length=4)
    assert len(features) == 3 and [w.query_length for w in windows] == [4, 4, 4]
    for name in ("token_ids", "segment_ids", "p_mask", "token_start_char", "token_end_char"):
        assert features.arrays[name].dtype == np.int32
        assert features.arrays[name].shape == (3, 64)
    assert features.arrays["token_is_max_context"].dtype == np.int8
    for name in ("start_positions", "end_positions", "is_impossible", "question_index"):
        assert features.arrays[name].dtype == np.int32 and features.arrays[name].shape == (3,)
    assert features.lengths.dtype == np.int32
    assert features.arrays["is_impossible"].tolist() == [0, 0, 1]
    assert _answer_text(features, 1, examples[1]) == "10th and 11th centuries"


def test_each_context_tokenized_once(tokenizer):
    calls = []
    spy = copy.copy(tokenizer)
    spy.encode_with_offsets = lambda text: calls.append(text) or tokenizer.encode_with_offsets(
        text)
    featurize(read_squad(os.path.join(DATA, "v1.json")), spy)
    assert len(calls) == 2


def test_bad_settings(tokenizer):
    with pytest.raises(ValueError, match="max_seq_length=10 must exceed max_query_length=7"):
        featurize([], tokenizer, max_seq_length=10, max_query_length=7)
    with pytest.raises(ValueError, match="doc_stride=0 must be >= 1"):
        featurize([], tokenizer, doc_stride=0)


# -- The graph's windows against the host reference -------------------------------

def _assert_same(got, expected):
    (features, windows), (ref_features, ref_windows) = got, expected
    assert list(features.arrays) == list(ref_features.arrays) and windows == ref_windows
    for name, array in ref_features.arrays.items():
        assert features.arrays[name].dtype == array.dtype, name
        assert np.array_equal(features.arrays[name], array), name
    assert features.lengths.dtype == ref_features.lengths.dtype
    assert np.array_equal(features.lengths, ref_features.lengths)
    assert features.label_keys == ref_features.label_keys


def _varied_examples():
    """Short and long contexts, an empty one, long questions, answers at the start,
    the end and across window edges, unanswerable and misplaced ones."""
    words = LONG.split()
    examples = [SquadExample("empty", "Why is there nothing here at all?", "", is_impossible=True),
                SquadExample("none", "Which queen ruled the city?", LONG, is_impossible=True),
                SquadExample("short", "Who?", "Anna.", (("Anna", 0),)),
                # An answer on no token (a lone accent; training skips it) and one
                # that is not where the file says (training skips it too).
                SquadExample("accent", "Which mark?", "a \u0301 b", (("\u0301", 2),)),
                SquadExample("far", "Where?", "Short one.", (("nowhere", 40),))]
    for n, (first, count) in enumerate([(0, 1), (len(words) - 2, 2), (7, 5), (30, 12),
                                        (55, 3), (61, 9), (90, 1)]):
        start = len(" ".join(words[:first])) + (first > 0)
        answer = " ".join(words[first:first + count])
        question = " ".join(words[n:n + 3 + 4 * n]) + "?"  # up to 27 words: cut
        examples.append(SquadExample(f"a{n}", question, LONG, ((answer, start),)))
    return examples


@pytest.mark.parametrize("max_seq_length,doc_stride,max_query_length", [
    (40, 11, 5), (32, 3, 8), (24, 50, 4), (64, 16, 20), (384, 128, 64)])
@pytest.mark.parametrize("is_training", [False, True])
def test_features_equal_the_host_reference(tokenizer, max_seq_length, doc_stride,
                                           max_query_length, is_training):
    examples = _varied_examples()
    options = dict(max_seq_length=max_seq_length, doc_stride=doc_stride,
                   max_query_length=max_query_length, is_training=is_training)
    got = featurize(examples, tokenizer, **options)
    assert len(got[1]) > len(examples) or max_seq_length == 384  # several windows each
    _assert_same(got, squad_reference.featurize(examples, tokenizer, **options))


def test_features_equal_the_host_reference_in_chunks(tokenizer, monkeypatch):
    from albert_tf.tasks.squad import data

    examples = read_squad(os.path.join(DATA, "v1.json")) + _varied_examples()
    monkeypatch.setattr(data, "_CHUNK", 3)  # windows built 3 questions at a time
    got = featurize(examples, tokenizer, max_seq_length=32, doc_stride=7, max_query_length=6)
    _assert_same(got, squad_reference.featurize(examples, tokenizer, max_seq_length=32,
                                                doc_stride=7, max_query_length=6))


def test_max_context_closed_form_equals_the_reference_scores():
    """Random context and query lengths, strides below and above the window."""
    import tensorflow as tf

    from albert_tf.steps import squad_windows as windows

    rng = np.random.default_rng(0)
    for max_seq_length, stride in [(40, 7), (64, 13), (384, 128), (30, 100), (110, 1)]:
        query = rng.integers(0, max_seq_length - 3, 60)
        context = rng.integers(0, 3 * max_seq_length, 60)
        plan = windows._plan(tf.constant(query, tf.int32), tf.constant(context, tf.int32),
                             max_seq_length, stride)
        splits = tf.constant(np.concatenate([[0], np.cumsum(context)]), tf.int32)
        best = np.split(windows._max_context_window(plan, tf.constant(context, tf.int32),
                                                    splits).numpy(), np.cumsum(context)[:-1])
        for q, n, got in zip(query, context, best):
            spans = doc_windows(int(n), max_seq_length - int(q) - 3, stride)
            assert got.tolist() == np.argmax(max_context(spans, int(n)), axis=0).tolist()
