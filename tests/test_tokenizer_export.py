"""The in-graph tokenizer in tf.data, in a SavedModel (same and fresh process), Keras configs."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.tokenizer import AlbertTokenizer, HostTokenizer
from albert_tf.steps import SegmentPacker
from conftest import FIXTURES
from packing_reference import pack_host

MODEL = os.path.join(FIXTURES, "spm", "albert_30k_clean.model")
SEQ = 19
QUESTIONS = ["Who wrote it?", "Où est-il né, en 1990?", ""]
CONTEXTS = ["Café Österreich was written in 1990, by ``Anna''.", "ΟΔΟΣ", "  \t "]


@pytest.fixture(scope="module")
def tok():
    # Its own tokenizer, not the session's: this file saves and reloads SavedModels that
    # hold the SentencePiece op, and a reloaded one dropped later takes the session
    # tokenizer's SentencePiece resource with it (seen when other files ran after it).
    return AlbertTokenizer(MODEL)


@pytest.fixture(scope="module")
def host():
    return HostTokenizer(MODEL)


def _packer(tok):
    return SegmentPacker(SEQ, cls_id=tok.cls_id, sep_id=tok.sep_id, pad_id=tok.pad_id)


class QaFeaturizer(tf.Module):
    """What a question-answering export needs: packed ids and context offsets."""

    def __init__(self, tokenizer, packer):
        super().__init__()
        self.tokenizer = tokenizer
        self.packer = packer

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)] * 2)
    def featurize(self, questions, contexts):
        ids, starts, ends = self.tokenizer.tokenize_with_offsets(contexts)
        packed = self.packer(self.tokenizer(questions), ids)
        packed.update(context_ids=ids.to_tensor(-1), context_starts=starts.to_tensor(-1),
                      context_ends=ends.to_tensor(-1))
        return packed


def _expected(host):
    """The same features from the host path."""
    out = {k: [] for k in ("token_ids", "segment_ids", "padding_mask")}
    for q, c in zip(QUESTIONS, CONTEXTS):
        packed = pack_host(host.encode(q), host.encode(c), SEQ, host.cls_id, host.sep_id,
                           host.pad_id)
        for k in out:
            out[k].append(packed[k])
    offsets = [host.encode_with_offsets(c) for c in CONTEXTS]
    width = max(len(o[0]) for o in offsets)
    for name, column in (("context_ids", 0), ("context_starts", 1), ("context_ends", 2)):
        out[name] = [o[column] + [-1] * (width - len(o[column])) for o in offsets]
    return {k: np.array(v, np.int32) for k, v in out.items()}


def _assert_features_equal(got, expected):
    assert sorted(got) == sorted(expected)
    for k in expected:
        np.testing.assert_array_equal(np.asarray(got[k]), expected[k], err_msg=k)


def test_tf_data_pipeline(tok, host):
    packer = _packer(tok)
    texts = CONTEXTS + QUESTIONS + ["In 1990, we", "ﬁve ½"]
    ds = tf.data.Dataset.from_tensor_slices(texts).batch(3).map(lambda x: packer(tok(x)))
    token_ids = np.concatenate([batch["token_ids"].numpy() for batch in ds])
    expected = [pack_host(host.encode(t), None, SEQ, 2, 3, 0)["token_ids"] for t in texts]
    np.testing.assert_array_equal(token_ids, np.stack(expected))
    ds = tf.data.Dataset.from_tensor_slices(texts).map(tok.tokenize_with_offsets)
    for text, (ids, starts, ends) in zip(texts, ds):
        got = (ids.numpy().tolist(), starts.numpy().tolist(), ends.numpy().tolist())
        assert got == host.encode_with_offsets(text)


def test_saved_model_round_trip(tok, host, tmp_path):
    module = QaFeaturizer(tok, _packer(tok))
    path = str(tmp_path / "featurizer")
    tf.saved_model.save(module, path, signatures={"serving_default": module.featurize})
    serving = tf.saved_model.load(path).signatures["serving_default"]
    got = serving(questions=tf.constant(QUESTIONS), contexts=tf.constant(CONTEXTS))
    _assert_features_equal(got, _expected(host))


@pytest.mark.slow
def test_saved_model_serves_in_a_fresh_process(tok, host, tmp_path):
    """Only TensorFlow Text (for the SentencePiece op) is needed to serve the export."""
    module = QaFeaturizer(tok, _packer(tok))
    path = str(tmp_path / "featurizer")
    tf.saved_model.save(module, path, signatures={"serving_default": module.featurize})
    script = (
        "import json, sys, tensorflow as tf, tensorflow_text\n"
        "m = tf.saved_model.load(sys.argv[1])\n"
        "out = m.signatures['serving_default'](questions=tf.constant(json.loads(sys.argv[2])),"
        " contexts=tf.constant(json.loads(sys.argv[3])))\n"
        "print(json.dumps({k: v.numpy().tolist() for k, v in out.items()}))\n")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH="")
    result = subprocess.run([sys.executable, "-c", script, path, json.dumps(QUESTIONS),
                             json.dumps(CONTEXTS)], capture_output=True, text=True, env=env,
                            cwd=str(tmp_path), timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    _assert_features_equal(json.loads(result.stdout.strip().splitlines()[-1]), _expected(host))


def test_tokenizer_config_round_trip(tok):
    config = tok.get_config()
    assert json.loads(json.dumps(config)) == config
    assert config["lowercase"] is True
    for clone in (AlbertTokenizer.from_config(config),
                  keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(tok))):
        assert isinstance(clone, AlbertTokenizer)
        assert clone.get_config() == config
        assert clone(CONTEXTS).to_list() == tok(CONTEXTS).to_list()


def test_tokenizer_accepts_model_bytes(tok):
    with open(MODEL, "rb") as f:
        from_bytes = AlbertTokenizer(f.read(), name="from_bytes")
    assert from_bytes("In 1990, we").numpy().tolist() == tok("In 1990, we").numpy().tolist()


def test_packer_config_round_trip():
    packer = SegmentPacker(11, cls_id=7, sep_id=8, pad_id=9, name="packer")
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(packer))
    assert clone.get_config() == packer.get_config()
    assert (clone.max_seq_length, clone.cls_id, clone.sep_id, clone.pad_id) == (11, 7, 8, 9)


def test_a_seed_set_after_the_tokenizers_are_made_leaves_them_working():
    """Setting a seed clears TensorFlow's eager kernels, and with them the resources
    a kernel owns (tensorflow-text's SentencePiece model was one)."""
    import keras

    from albert_tf.tokenizer import WordPieceTokenizer

    tokenizers = (AlbertTokenizer(os.path.join(FIXTURES, "spm", "albert_30k_clean.model")),
                  WordPieceTokenizer(os.path.join(FIXTURES, "wordpiece", "vocab.txt")))
    before = [t("this is a test").numpy().tolist() for t in tokenizers]
    keras.utils.set_random_seed(7)
    assert [t("this is a test").numpy().tolist() for t in tokenizers] == before
