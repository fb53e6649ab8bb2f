"""WordPiece through the plug point: load_tokenizer on folders, saved folders, tf.data,
Keras configs, and a SavedModel (same and fresh process)."""

import json
import os
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import load_tokenizer
from albert_tf.backbone import AlbertBackbone
from albert_tf.checkpoints import native, save_pretrained
from albert_tf.tokenizer import HostWordPieceTokenizer, WordPieceTokenizer
from albert_tf.steps import SegmentPacker
from albert_tf.tokenizer.wordpiece.vocab import parse_tokens
from conftest import FIXTURES, REFERENCE_MODELS
from packing_reference import pack_host
from helpers import tiny_config

VOCAB = os.path.join(FIXTURES, "wordpiece", "vocab.txt")
SEQ = 17
TEXTS = ["ALBERT是一个轻量的BERT模型。", "Café Österreich，1990年！", "", "한국어 ガメラ"]


@pytest.fixture(scope="module")
def tok():
    return WordPieceTokenizer(VOCAB)


@pytest.fixture(scope="module")
def host():
    return HostWordPieceTokenizer(VOCAB)


def _ids(tokenizer, texts=TEXTS):
    if isinstance(tokenizer, HostWordPieceTokenizer):
        return [tokenizer.encode(t) for t in texts]
    return tokenizer(texts).to_list()


def test_a_vocabulary_file_gives_both_forms(host):
    graph = load_tokenizer(VOCAB)
    assert isinstance(load_tokenizer(VOCAB, host=True), HostWordPieceTokenizer)
    assert isinstance(graph, WordPieceTokenizer)
    for name in ("pad_id", "unk_id", "cls_id", "sep_id", "mask_id", "vocabulary_size",
                 "lowercase", "vocabulary_type"):
        assert getattr(host, name) == getattr(graph, name), name
    assert _ids(graph) == _ids(host)


@pytest.mark.parametrize("name", ["vocab.txt", "vocab_chinese.txt"])
def test_a_checkpoint_folder_with_its_vocabulary(tmp_path, host, name):
    """Hugging Face (vocab.txt + tokenizer_config.json) and Google's zh releases."""
    folder = tmp_path / "checkpoint"
    shutil.copytree(os.path.join(REFERENCE_MODELS, "tiny", "hf"), folder)
    shutil.copyfile(VOCAB, folder / name)
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    for form in (load_tokenizer(str(folder), host=True), load_tokenizer(str(folder))):
        assert form.vocabulary_type == "wordpiece" and form.lowercase is True
        assert _ids(form) == _ids(host)
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    with pytest.raises(ValueError, match="lowercase=False contradicts the vocabulary"):
        load_tokenizer(str(folder), host=True)  # an uncased vocabulary


def test_a_saved_model_folder_records_and_reloads_its_vocabulary(tmp_path, host):
    folder = save_pretrained(AlbertBackbone(tiny_config(vocabulary_size=host.vocabulary_size)),
                             str(tmp_path / "model"), tokenizer=host)
    record = native.read_metadata(folder)["vocabulary"]
    assert record == {"type": "wordpiece", "file": "vocab.txt", "lowercase": True}
    with open(os.path.join(folder, "vocab.txt"), encoding="utf-8") as saved:
        assert parse_tokens(saved.read()) == list(host.tokens)
    reloaded = load_tokenizer(folder)
    assert isinstance(reloaded, WordPieceTokenizer) and _ids(reloaded) == _ids(host)
    assert load_tokenizer(folder, host=True).fingerprint() == host.fingerprint()


def _packer(tok):
    return SegmentPacker(SEQ, cls_id=tok.cls_id, sep_id=tok.sep_id, pad_id=tok.pad_id)


def test_tf_data_pipeline(tok, host):
    packer = _packer(tok)
    ds = tf.data.Dataset.from_tensor_slices(TEXTS).batch(3).map(lambda x: packer(tok(x)))
    token_ids = np.concatenate([batch["token_ids"].numpy() for batch in ds])
    expected = [pack_host(host.encode(t), None, SEQ, 101, 102, 0)["token_ids"] for t in TEXTS]
    np.testing.assert_array_equal(token_ids, np.stack(expected))


class Featurizer(tf.Module):
    """Packed pairs and the second text's ids and offsets, as a QA export needs."""

    def __init__(self, tokenizer):
        super().__init__()
        self.tokenizer = tokenizer
        self.packer = _packer(tokenizer)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)] * 2)
    def featurize(self, first, second):
        ids, starts, ends = self.tokenizer.tokenize_with_offsets(second)
        packed = self.packer(self.tokenizer(first), ids)
        packed.update(ids=ids.to_tensor(-1), starts=starts.to_tensor(-1),
                      ends=ends.to_tensor(-1))
        return packed


def _expected(host, first, second):
    out = {k: [] for k in ("token_ids", "segment_ids", "padding_mask")}
    for a, b in zip(first, second):
        packed = pack_host(host.encode(a), host.encode(b), SEQ, host.cls_id, host.sep_id,
                           host.pad_id)
        for k in out:
            out[k].append(packed[k])
    offsets = [host.encode_with_offsets(b) for b in second]
    width = max(len(o[0]) for o in offsets)
    for name, column in (("ids", 0), ("starts", 1), ("ends", 2)):
        out[name] = [o[column] + [-1] * (width - len(o[column])) for o in offsets]
    return {k: np.array(v, np.int32) for k, v in out.items()}


def _assert_features_equal(got, expected):
    assert sorted(got) == sorted(expected)
    for k in expected:
        np.testing.assert_array_equal(np.asarray(got[k]), expected[k], err_msg=k)


def _save(tok, tmp_path):
    module = Featurizer(tok)
    path = str(tmp_path / "featurizer")
    tf.saved_model.save(module, path, signatures={"serving_default": module.featurize})
    return path


def test_saved_model_round_trip(tok, host, tmp_path):
    serving = tf.saved_model.load(_save(tok, tmp_path)).signatures["serving_default"]
    got = serving(first=tf.constant(TEXTS), second=tf.constant(TEXTS[::-1]))
    _assert_features_equal(got, _expected(host, TEXTS, TEXTS[::-1]))


@pytest.mark.slow
def test_saved_model_serves_in_a_fresh_process(tok, host, tmp_path):
    """Only TensorFlow Text (for the FastWordpiece op) is needed to serve the export."""
    path = _save(tok, tmp_path)
    script = (
        "import json, sys, tensorflow as tf, tensorflow_text\n"
        "m = tf.saved_model.load(sys.argv[1])\n"
        "texts = json.loads(sys.argv[2])\n"
        "out = m.signatures['serving_default'](first=tf.constant(texts),"
        " second=tf.constant(texts[::-1]))\n"
        "print(json.dumps({k: v.numpy().tolist() for k, v in out.items()}))\n")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH="")
    result = subprocess.run([sys.executable, "-c", script, path, json.dumps(TEXTS)],
                            capture_output=True, text=True, env=env, cwd=str(tmp_path),
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    _assert_features_equal(json.loads(result.stdout.strip().splitlines()[-1]),
                           _expected(host, TEXTS, TEXTS[::-1]))


def test_tokenizer_config_round_trip(tok):
    config = tok.get_config()
    assert json.loads(json.dumps(config)) == config
    assert config["lowercase"] is True and len(config["vocabulary"]) == 21128
    for clone in (WordPieceTokenizer.from_config(config),
                  keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(tok))):
        assert isinstance(clone, WordPieceTokenizer)
        assert clone.get_config() == config
        assert _ids(clone) == _ids(tok)
