"""`load_tokenizer`: the tokenizer of a vocabulary file, a checkpoint folder or a model folder."""

import json
import os
import shutil

import pytest

from albert_tf.backbone import AlbertBackbone
from albert_tf import load_tokenizer
from albert_tf.checkpoints import native, save_pretrained
from albert_tf.tokenizer import AlbertTokenizer, HostTokenizer
from albert_tf.tokenizer.base import get_type, vocabulary_file_names
from conftest import FIXTURES, REFERENCE_MODELS
from helpers import tiny_config

MODEL = os.path.join(FIXTURES, "spm", "albert_30k_clean.model")
TEXT = ["This is a test", "Café Österreich, 1990, by ``Anna''."]


def _ids(tokenizer, texts=TEXT):
    if isinstance(tokenizer, HostTokenizer):
        return [tokenizer.encode(t) for t in texts]
    return tokenizer(texts).to_list()


def test_a_vocabulary_file_gives_both_forms_with_the_same_ids():
    host, graph = load_tokenizer(MODEL, host=True), load_tokenizer(MODEL)
    assert isinstance(host, HostTokenizer) and isinstance(graph, AlbertTokenizer)
    assert _ids(host)[0] == [48, 25, 21, 1289]
    assert _ids(host) == _ids(graph)
    for name in ("pad_id", "unk_id", "cls_id", "sep_id", "mask_id", "vocabulary_size",
                 "lowercase", "vocabulary_type"):
        assert getattr(host, name) == getattr(graph, name), name
    assert (host.cls_id, host.sep_id, host.vocabulary_type) == (2, 3, "sentencepiece")


@pytest.mark.parametrize("layout, name", [
    ("hf", "spiece.model"), ("google", "30k-clean.model"),
    ("keras_hub", os.path.join("assets", "tokenizer", "vocabulary.spm"))])
def test_checkpoint_folders_ship_their_vocabulary_under_their_own_names(tmp_path, layout, name):
    folder = tmp_path / layout
    shutil.copytree(os.path.join(REFERENCE_MODELS, "tiny", layout), folder)
    os.makedirs(os.path.dirname(folder / name), exist_ok=True)
    shutil.copyfile(MODEL, folder / name)
    assert _ids(load_tokenizer(str(folder), host=True)) == _ids(load_tokenizer(MODEL, host=True))
    if layout == "google":  # a TF1 checkpoint prefix names its folder
        assert load_tokenizer(str(folder / "model.ckpt"), host=True).vocabulary_size == 30000


def test_hugging_face_casing_comes_from_its_tokenizer_config(tmp_path):
    shutil.copyfile(MODEL, tmp_path / "spiece.model")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    with pytest.raises(ValueError, match="lowercase=False contradicts the vocabulary"):
        load_tokenizer(str(tmp_path), host=True)  # the fixture model is uncased


def test_a_saved_model_folder_records_and_reloads_its_vocabulary(tmp_path):
    tokenizer = load_tokenizer(MODEL, host=True)
    folder = save_pretrained(AlbertBackbone(tiny_config(vocabulary_size=30000)),
                             str(tmp_path / "model"), tokenizer=tokenizer)
    record = native.read_metadata(folder)["vocabulary"]
    assert record == {"type": "sentencepiece", "file": get_type("sentencepiece").file_name,
                      "lowercase": True}
    assert _ids(load_tokenizer(folder)) == _ids(tokenizer)
    os.remove(os.path.join(folder, record["file"]))
    with pytest.raises(FileNotFoundError, match="names the vocabulary spiece.model, which is not"):
        load_tokenizer(folder)


def test_a_folder_without_vocabulary_says_what_it_looked_for(tmp_path):
    with pytest.raises(FileNotFoundError) as raised:
        load_tokenizer(str(tmp_path))
    message = str(raised.value)
    assert message.startswith(f"{tmp_path}: no vocabulary in the folder (looked for spiece.model")
    assert "--vocab_file" in message


def test_bad_files_are_named(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello\n")
    with pytest.raises(ValueError, match=f"{bad}: not a vocabulary file; expected a "
                                         r"SentencePiece model \(.model\)"):
        load_tokenizer(str(bad))
    with pytest.raises(FileNotFoundError, match=f"vocabulary file not found: {tmp_path}/x.model"):
        load_tokenizer(str(tmp_path / "x.model"))


def test_downloads_fetch_every_vocabulary_file_name():
    from albert_tf.checkpoints import download

    assert {"spiece.model", "30k-clean.model"} <= set(vocabulary_file_names())
    assert download.is_published_name("albert_base_v2")
    assert download.is_published_name("hf:albert/albert-base-v2")
    assert not download.is_published_name("runs/x/spm.model")
