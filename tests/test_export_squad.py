"""SQuAD exports: in-graph windowing and decoding agree with `SquadTask.decode`;
raw text of every kind gives defined outputs."""

import numpy as np
import pytest
import tensorflow as tf

import export_helpers as helpers
from albert_tf.tasks import finetuned
from albert_tf.tasks.squad import task as squad_task
from export_helpers import assert_outputs_close, expected_squad

# Windows of 19 tokens with a question of up to 6 and a stride of 5: long
# contexts get many overlapping windows, so the max-context rule decides.
QUESTIONS = ["Who wrote the book?", "when", "", "Où est-il né, en 1990?", "what is ½?",
             "A very long question with more than six tokens in it", "x", "where"]
CONTEXTS = [
    "Anna wrote the book in 1990, in Paris. She lived there for ten years, then left for Rome.",
    "It rained. " * 12,
    "Paris",
    "Café Österreich was written in 1990, by ``Anna''. Il est né à Genève.",
    "ﬁve ½ quarters of 12,345 pounds, said the ΟΔΟΣ sign",
    "tiny",
    "",
    "  \t leading and trailing whitespace \n ",
]


@pytest.fixture(scope="module", params=["squad", "squad_v2"])
def squad(request, tmp_path_factory):
    return helpers.exported(tmp_path_factory, request.param)


def _serve(path, questions, contexts):
    return helpers.serve(path, question=questions, context=contexts)


def _as_text(outputs):
    return dict(outputs, answer=np.array([a.decode() for a in outputs["answer"]], dtype=object))


def test_answers_agree_with_the_host_pipeline(squad):
    got = _as_text(_serve(squad[0], QUESTIONS, CONTEXTS))
    expected = expected_squad(squad, QUESTIONS, CONTEXTS)
    assert sum(bool(a) for a in expected["answer"]) >= 4  # the test sees real answers
    assert_outputs_close(got, expected, atol=1e-4)
    for i, answer in enumerate(got["answer"]):
        assert CONTEXTS[i][got["start"][i]:got["end"][i]] == answer


def test_inputs_that_are_not_one_batch_of_vectors_are_refused(squad):
    helpers.assert_refuses_other_shapes(helpers.signature(squad[0]), question=QUESTIONS[:2],
                                        context=CONTEXTS[:2])


def test_v2_applies_the_runs_heldout_threshold(tmp_path_factory):
    fixture = helpers.exported(tmp_path_factory, "squad_v2")
    info = helpers.export_info(fixture[0])
    assert info["null_threshold_source"].startswith("held-out training questions")
    questions, contexts = zip(*helpers.THRESHOLD_QUESTIONS)
    got = _as_text(_serve(fixture[0], list(questions), list(contexts)))
    assert all(o > info["null_threshold"] for o, a in zip(got["null_odds"], got["answer"]) if not a)
    # The threshold lies between these questions' null odds: some answered, some not.
    assert 0 < sum(bool(a) for a in got["answer"]) < len(questions)
    assert_outputs_close(got, expected_squad(fixture, questions, contexts), atol=1e-4)


def test_heldout_threshold_is_read_beside_the_model(tmp_path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    assert squad_task.heldout_threshold(str(model_dir)) == (0.0, "default 0")
    helpers.write_heldout_threshold(tmp_path, -1.25)
    threshold, source = squad_task.heldout_threshold(str(model_dir))
    assert threshold == -1.25 and source.startswith("held-out training questions")


INVALID_UTF8 = [b"caf\xc3", b"\xff\xfeAnna wrote \xe2\x82 it", b"\xed\xa0\x80 surrogate"]


def _robustness_inputs():
    long_context = "Anna wrote the book in 1990, in Paris. " * 400  # ~16,000 characters
    texts = ["", " ", "\x00\x07\x1b control \x7f\u200b\u202e", "東京 Ελλάδα Москва عربى 🙂👍🏽",
             long_context, "short"] + INVALID_UTF8
    contexts = [t if isinstance(t, bytes) else t.encode() for t in texts]
    questions = [c[:40] for c in reversed(contexts)]  # every length, every kind, mixed
    return questions, contexts


def test_any_raw_text_gives_defined_answers(squad):
    questions, contexts = _robustness_inputs()
    got = _serve(squad[0], questions, contexts)
    n = len(contexts)
    assert {k: v.shape for k, v in got.items()} == {k: (n,) for k in got}
    decoded = [c.decode("utf-8", "replace") for c in contexts]
    for i, context in enumerate(decoded):
        answer = got["answer"][i].decode("utf-8")  # valid UTF-8 even from invalid input
        assert context[got["start"][i]:got["end"][i]] == answer
    assert np.isfinite(got["score"]).all()
    empty = _serve(squad[0], tf.zeros([0], tf.string), tf.zeros([0], tf.string))
    assert {k: v.shape for k, v in empty.items()} == {k: (0,) for k in got}
    # Invalid UTF-8 is read as U+FFFD: the host pipeline on the decoded text agrees,
    # on the part of each context the export reads (SERVING.md: bounded memory).
    from albert_tf.tokenizer.loading import load_tokenizer
    from albert_tf.steps import text_limit

    settings = squad[3]
    kept = text_limit.cut(tf.constant(decoded), load_tokenizer(helpers.SPM),
                          text_limit.WINDOWED_LENGTHS * settings.max_seq_length).numpy()
    assert len(kept[4]) < len(decoded[4]) / 4  # the long context: cut
    expected = expected_squad(squad, [q.decode("utf-8", "replace") for q in questions],
                              [k.decode("utf-8") for k in kept])
    assert_outputs_close(_as_text(got), expected, atol=1e-4)


def test_classifier_handles_any_raw_text(tmp_path_factory):
    path, _, task, settings, model = helpers.exported(tmp_path_factory, "sst2")
    _, contexts = _robustness_inputs()
    got = helpers.serve(path, text=contexts)
    assert got["probabilities"].shape == (len(contexts), 2)
    np.testing.assert_allclose(got["probabilities"].sum(axis=1), 1.0, rtol=1e-5)
    decoded = [c.decode("utf-8", "replace") for c in contexts]
    logits = helpers.host_classification(task, settings, model, decoded)
    np.testing.assert_array_equal(got["label_id"], np.argmax(logits, axis=-1))
    empty = helpers.serve(path, text=tf.zeros([0], tf.string))
    assert empty["probabilities"].shape == (0, 2) and empty["label"].shape == (0,)


@pytest.mark.slow
def test_span_head_on_v2_agrees_with_the_host_pipeline(tmp_path):
    """squad_v2 with the plain span head: null odds = [CLS] score minus the best span's."""
    model_dir, task, settings, model = helpers.finetuned_dir(tmp_path, "squad_v2",
                                                             qa_head="span")
    module, info = finetuned.build_serving_module(model_dir)
    assert info["head"] == "span" and info["null_threshold"] == 0.0
    out = module.serving_default(tf.constant(QUESTIONS), tf.constant(CONTEXTS))
    got = _as_text({k: v.numpy() for k, v in out.items()})
    fixture = (None, model_dir, task, settings, model)
    expected = expected_squad(fixture, QUESTIONS, CONTEXTS, threshold=0.0)
    assert_outputs_close(got, expected, atol=1e-4)
