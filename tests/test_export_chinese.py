"""Chinese end to end through the plug points: a WordPiece vocabulary shipped with a
fine-tuned folder, raw Chinese text into the export, the same answers as the host."""

import os

import numpy as np
import pytest

import export_helpers as helpers
from albert_tf import tasks
from albert_tf import load_tokenizer
from albert_tf.backbone import AlbertBackbone
from albert_tf.config import AlbertConfig
from albert_tf.training.finetuning import save_finetuned
from albert_tf.training.settings import FinetuneSettings
from conftest import FIXTURES
from albert_tf.tasks.base import Example, SplitData
from albert_tf.tasks.long_inputs import encode_pairs
from albert_tf.tasks.squad.data import SquadExample
from albert_tf.tasks.finetuned import export_model

VOCAB = os.path.join(FIXTURES, "wordpiece", "vocab.txt")
TINY = dict(helpers.TINY, vocabulary_size=21128)
PAIRS = [("这家餐厅的菜真好吃", "菜的味道很好"), ("他昨天去了北京。", "他没有离开上海！"),
         ("ALBERT模型在2019年发布", "模型发布于2019年")]
CONTEXT = "《红楼梦》是曹雪芹创作的长篇小说，成书于清代。作者曹雪芹出生于南京。"
QUESTIONS = ["《红楼梦》的作者是谁？", "曹雪芹出生于哪里？"]


def _finetuned(tmp_path, task_name, **options):
    task = tasks.get(task_name)
    settings = FinetuneSettings(task=task_name, output_dir=str(tmp_path), max_seq_length=32,
                                dropout=0.0, classifier_dropout=0.0, task_options=options)
    model = task.build_model(AlbertBackbone(AlbertConfig(**TINY)), settings)
    helpers.randomize(model, seed=3)
    model_dir = os.path.join(str(tmp_path), "model")
    save_finetuned(model, task, settings, model_dir, load_tokenizer(VOCAB, host=True))
    return task, settings, model, export_model(model_dir, os.path.join(str(tmp_path), "export"))


@pytest.fixture(scope="module")
def ocnli(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ocnli")
    return (folder, *_finetuned(folder, "ocnli"))


def test_a_chinese_pair_classifier_serves_raw_text_as_the_host_featurizes_it(ocnli):
    folder, task, settings, model, version = ocnli
    assert helpers.export_info(version)["inputs"] == ["text_a", "text_b"]
    host = load_tokenizer(os.path.join(str(folder), "model"), host=True)
    assert host.vocabulary_type == "wordpiece" and host.cls_id == 101
    examples = [Example(str(i), a, b) for i, (a, b) in enumerate(PAIRS)]
    arrays, lengths = encode_pairs(examples, host, settings.max_seq_length)
    arrays["padding_mask"] = np.arange(settings.max_seq_length)[None] < lengths[:, None]
    logits = np.asarray(model({k: v.astype("int32") for k, v in arrays.items()},
                              training=False)["logits"])
    got = helpers.serve(version, text_a=[a for a, _ in PAIRS], text_b=[b for _, b in PAIRS])
    np.testing.assert_allclose(got["probabilities"], np.exp(logits) / np.exp(logits).sum(
        -1, keepdims=True), atol=1e-5)
    assert [label.decode() for label in got["label"]] == [
        task.spec.labels[i] for i in np.argmax(logits, -1)]


def test_chinese_reading_comprehension_answers_with_offsets_into_the_context(tmp_path):
    task, settings, model, version = _finetuned(
        tmp_path, "cmrc2018", doc_stride=8, max_query_length=12, max_answer_length=6)
    host = load_tokenizer(os.path.join(str(tmp_path), "model"), host=True)
    examples = [SquadExample(f"q{i}", q, CONTEXT) for i, q in enumerate(QUESTIONS)]
    features = task.featurize(examples, host, settings, "dev")
    arrays = features.arrays
    inputs = {"token_ids": arrays["token_ids"], "segment_ids": arrays["segment_ids"],
              "p_mask": arrays["p_mask"],
              "padding_mask": (np.arange(features.max_seq_length)[None]
                               < features.lengths[:, None]).astype("int32")}
    outputs = {k: np.asarray(v) for k, v in model(inputs, training=False).items()}
    predictions, _, _ = task.bind(settings).decode(
        SplitData("dev", examples, features, outputs))
    got = helpers.serve(version, question=QUESTIONS, context=[CONTEXT] * len(QUESTIONS))
    answers = [a.decode("utf-8") for a in got["answer"]]
    assert answers == [predictions[f"q{i}"] for i in range(len(QUESTIONS))]
    for answer, start, end in zip(answers, got["start"], got["end"]):
        assert answer and CONTEXT[start:end] == answer
    helpers.assert_refuses_other_shapes(helpers.signature(version), question=QUESTIONS,
                                        context=[CONTEXT] * len(QUESTIONS))


def test_only_tensorflow_text_ops_come_from_outside_core_tensorflow(ocnli):
    import tensorflow as tf

    extra = {op for op in helpers.op_types(ocnli[-1]) if not hasattr(tf.raw_ops, op)}
    assert extra and all(op.startswith("FastWordpiece") for op in extra), extra


@pytest.mark.parametrize("text", ["", "！？。，", "中" * 3000, "\ud800abc"])
def test_hostile_chinese_inputs_have_a_defined_result(ocnli, text):
    version = ocnli[-1]
    got = helpers.serve(version, text_a=[text.encode("utf-8", "replace")], text_b=["好"])
    assert got["probabilities"].shape == (1, 3) and np.isfinite(got["probabilities"]).all()
