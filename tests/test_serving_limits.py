"""What a deployment relies on: texts cut before tokenization without changing what
reaches the model, signatures that refuse inputs of mixed batch sizes, exports that
concurrent runs cannot replace and other users can read, training folders one
process at a time, and a full disk that keeps the last good checkpoint."""

import os
import socket
import subprocess
import sys
import threading

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import io_utils
from albert_tf.tokenizer.loading import load_tokenizer
from albert_tf.export import exporter
from albert_tf.steps import text_limit
from albert_tf.training import callbacks
from conftest import FIXTURES

SPM = os.path.join(FIXTURES, "spm", "albert_30k_clean.model")
WORDPIECE = os.path.join(FIXTURES, "wordpiece", "vocab.txt")
TEXTS = ["The quick brown fox jumps over the lazy dog near the riverbank again and again. " * 2,
         "浙商银行企业信贷部叶老桂博士则从另一个角度对五道门槛进行了解读。" * 2,
         "x" * 300, "a" + " " * 300 + "b c d e f g h i j k l m n o p", "12,345 and 6,789,000 " * 7,
         "iPhone6s在2014年发布，售价5288元。" * 3, "!?" * 90]


@pytest.fixture(scope="module", params=[SPM, WORDPIECE], ids=["sentencepiece", "wordpiece"])
def tokenizer(request):
    return load_tokenizer(request.param)


def test_a_cut_keeps_every_token_that_can_reach_the_model(tokenizer, tokens=3):
    full = tokenizer(tf.constant(TEXTS))
    first = tokenizer(text_limit.cut(tf.constant(TEXTS), tokenizer, tokens))
    qa = tokenizer(text_limit.cut(tf.constant(TEXTS), tokenizer, tokens, keep="last"))
    for i, text in enumerate(TEXTS):
        if text == "x" * 300 and tokenizer.vocabulary_type == "sentencepiece":
            continue  # one word longer than the cut: not covered (SERVING.md says why)
        ids = full[i].numpy().tolist()
        assert first[i].numpy().tolist()[:tokens] == ids[:tokens], text[:20]
        assert qa[i].numpy().tolist()[-tokens:] == ids[-tokens:], text[:20]
    assert sum(len(t) for t in text_limit.cut(tf.constant(TEXTS), tokenizer, tokens).numpy()) \
        < 0.7 * sum(len(t.encode()) for t in TEXTS), "little was cut: a weak test"


def test_a_text_under_the_limit_is_not_touched_and_a_cut_one_keeps_its_offsets(tokenizer):
    limit = text_limit.char_limit(tokenizer, 4)
    under = "z" * (limit - 1) + "   " + b"\xff".decode("latin-1")
    texts = tf.constant([under.encode("utf-8"), b"ab\xffcd " * 200, b""])
    out = text_limit.cut(texts, tokenizer, 4).numpy()
    assert out[0] == texts.numpy()[0] and out[2] == b""
    decoded = b"ab\xffcd ".decode("utf-8", "replace") * 200
    assert decoded.startswith(out[1].decode("utf-8")) and 0 < len(out[1]) < len(decoded)
    _, starts, ends = tokenizer.tokenize_with_offsets(tf.constant([out[1], texts.numpy()[1]]))
    n = len(starts[0]) - 2  # the cut word aside, the same characters
    assert starts[0][:n].numpy().tolist() == starts[1][:n].numpy().tolist()


# -- Input checks of the raw-text signatures ------------------------------------------

def _saved(module, tmp_path):
    tf.saved_model.save(module, str(tmp_path), signatures=module.signatures())
    return tf.saved_model.load(str(tmp_path)).signatures["serving_default"]


@pytest.mark.slow  # a save and a load: about 30 s
def test_signatures_refuse_inputs_of_several_batch_sizes_naming_them(tmp_path):
    from albert_tf.backbone import AlbertBackbone
    from albert_tf.config import AlbertConfig
    from albert_tf.export.classification import ClassifierServing
    from albert_tf.models import AlbertClassifier
    from export_helpers import TINY

    tok = load_tokenizer(WORDPIECE)
    model = AlbertClassifier(AlbertBackbone(AlbertConfig(**dict(TINY, vocabulary_size=21128))),
                             2, dropout=0.0)
    serving = _saved(ClassifierServing(model, tok, 11, ("no", "yes"), pair=True), tmp_path)
    good = serving(text_a=tf.constant(["甲", "乙"]), text_b=tf.constant(["丙", "丁"]))
    assert good["label"].shape == (2,)
    with pytest.raises(tf.errors.InvalidArgumentError, match="text_a.*text_b"):
        serving(text_a=tf.constant(["甲", "乙"]), text_b=tf.constant(["丙"]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="one batch"):
        serving(text_a=tf.constant([["甲", "乙"]]), text_b=tf.constant([["丙", "丁"]]))


# -- Exports ------------------------------------------------------------------------

def _fake_writer(barrier=None):
    def write(module, info, tmp, *args):
        with open(os.path.join(tmp, "saved_model.pb"), "wb") as f:
            f.write(b"x")
        exporter.write_info(info, tmp)
        if barrier is not None:
            barrier.wait(timeout=20)  # both exports chose their version and wrote
    return write


def test_concurrent_exports_end_with_two_versions_readable_by_others(tmp_path, monkeypatch):
    root = str(tmp_path / "exp")
    for version in (1, 2):
        os.makedirs(os.path.join(root, str(version)))
    monkeypatch.setattr(exporter, "_write_files", _fake_writer(threading.Barrier(2)))
    old = os.umask(0o022)
    try:
        results, errors = [], []

        def export():
            version, target = exporter.check_version(root)
            try:
                results.append(exporter.write_export(None, {"version": version}, target,
                                                     renumber=True))
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(e)

        threads = [threading.Thread(target=export) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        os.umask(old)
    assert not errors and sorted(results) == [os.path.join(root, "3"), os.path.join(root, "4")]
    assert exporter.versions(root) == [1, 2, 3, 4]
    for version in (3, 4):
        folder = os.path.join(root, str(version))
        assert exporter_info(folder)["version"] == version
        for dirpath, dirs, files in os.walk(folder):
            assert os.stat(dirpath).st_mode & 0o777 == 0o755, dirpath
            for name in files:
                assert os.stat(os.path.join(dirpath, name)).st_mode & 0o777 == 0o644, name
    assert not [n for n in os.listdir(root) if n.startswith(".3") or n.startswith(".4")]


def exporter_info(folder):
    import json

    from albert_tf.export import INFO_FILE

    with open(os.path.join(folder, INFO_FILE)) as f:
        return json.load(f)


def test_an_export_to_a_version_taken_meanwhile_is_refused_and_leaves_no_trace(tmp_path,
                                                                               monkeypatch):
    root = str(tmp_path / "exp")
    version, target = exporter.check_version(root, 5)

    def other_export_first(module, info, tmp, *args):
        _fake_writer()(module, info, tmp)
        os.makedirs(target)  # another process renamed its version 5 into place

    monkeypatch.setattr(exporter, "_write_files", other_export_first)
    with pytest.raises(FileExistsError, match="5 was written by another export"):
        exporter.write_export(None, {"version": 5}, target)
    assert os.listdir(root) == ["5"]
    assert os.listdir(target) == []  # the other export's folder, untouched


def test_atomic_directories_are_readable_by_other_users(tmp_path):
    old = os.umask(0o022)
    try:
        with io_utils.atomic_directory(str(tmp_path / "model")) as tmp:
            fd = os.open(os.path.join(tmp, "model.safetensors"), os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "model").st_mode & 0o777 == 0o755
    assert os.stat(tmp_path / "model" / "model.safetensors").st_mode & 0o777 == 0o644


# -- Training folders ------------------------------------------------------------------

HOLDER = ("import sys, time; from albert_tf.io_utils import hold_folder; "
          "hold_folder(sys.argv[1], '--output_dir'); print('held', flush=True); time.sleep(60)")


def test_a_busy_output_dir_is_refused_naming_its_holder_and_freed_when_it_dies(tmp_path):
    folder = str(tmp_path / "run")
    child = subprocess.Popen([sys.executable, "-c", HOLDER, folder], stdout=subprocess.PIPE,
                             text=True, env=dict(os.environ, PYTHONPATH=os.getcwd()))
    try:
        assert child.stdout.readline().strip() == "held"
        with pytest.raises(io_utils.FolderBusy) as e:
            io_utils.hold_folder(folder, "--output_dir")
        assert str(e.value) == (f"{folder} is in use by process {child.pid} on "
                                f"{socket.gethostname()}; wait for it to end or choose another "
                                "--output_dir")
    finally:
        child.kill()  # a killed process leaves nothing held
        child.wait()
    io_utils.hold_folder(folder, "--output_dir")
    io_utils.hold_folder(folder, "--output_dir")  # this process again: one hold


def _manager(directory):
    model = tf.Module()
    model.variables_ = [tf.Variable(np.ones((50, 50), np.float32))]
    optimizer = tf.Module()
    optimizer.state = [tf.Variable(np.zeros(50, np.float32))]
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
    return tf.train.CheckpointManager(checkpoint, str(directory), max_to_keep=3)


def test_a_full_disk_is_one_line_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    directory = tmp_path / "checkpoints"
    manager = _manager(directory)
    callbacks.save_checkpoint(manager, 10)
    good = manager.latest_checkpoint
    real_write = tf.train.Checkpoint._write

    def full_disk(self, prefix, options=None):
        os.makedirs(f"{prefix}_temp", exist_ok=True)  # what a cut-short write leaves
        raise tf.errors.ResourceExhaustedError(None, None, f"{prefix}_temp/part-00000; "
                                               "No space left on device")

    monkeypatch.setattr(tf.train.Checkpoint, "_write", full_disk)
    with pytest.raises(callbacks.CheckpointWriteFailed) as e:
        callbacks.save_checkpoint(manager, 20)
    monkeypatch.setattr(tf.train.Checkpoint, "_write", real_write)
    message = str(e.value)
    assert "\n" not in message and message.startswith(
        f"{directory}: no space left for the checkpoint of step 20 (it needs about ")
    assert f"the last good checkpoint is {good}" in message
    assert manager.latest_checkpoint == good and tf.train.latest_checkpoint(str(directory)) == good
    assert not [n for n in os.listdir(directory) if n.endswith("_temp")]


def test_stale_temp_checkpoints_are_removed(tmp_path):
    (tmp_path / "ckpt-7_temp").mkdir()
    (tmp_path / "ckpt-7_temp" / "part-00000-of-00001.data-00000-of-00001").write_bytes(b"x")
    (tmp_path / "ckpt-6.index").write_bytes(b"x")
    callbacks.remove_partial_checkpoints(str(tmp_path))
    assert os.listdir(tmp_path) == ["ckpt-6.index"]
