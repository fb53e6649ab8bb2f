import io
import os
import shutil
import tarfile

import pytest

from albert_tf.checkpoints import CheckpointError, download
from helpers import reference


def test_local_paths_unchanged():
    _, _, folder = reference("tiny")
    assert download.resolve(folder) == folder
    prefix = os.path.join(folder, "google", "model.ckpt")
    assert download.resolve(prefix) == prefix


def test_unknown_name_lists_known():
    with pytest.raises(CheckpointError, match="not a published checkpoint name") as e:
        download.resolve("albert_bass_v2")
    assert "albert_base_v2" in str(e.value)
    with pytest.raises(CheckpointError, match="unknown source 'gcs'"):
        download.resolve("gcs:albert_base_v2")


@pytest.mark.parametrize("name, fetcher, what", [
    ("albert_base_v2", "fetch_hf",
     "the Hugging Face repository albert/albert-base-v2 (https://huggingface.co/albert/"),
    ("google:albert_base_v2", "fetch_google",
     "https://storage.googleapis.com/albert_models/albert_base_v2.tar.gz"),
    ("keras_hub:albert_base_en_uncased", "fetch_keras_hub",
     "the keras-hub preset albert_base_en_uncased (from Kaggle)")])
def test_no_network_is_one_line_naming_what_where_and_the_way_out(monkeypatch, tmp_path, name,
                                                                  fetcher, what):
    def offline(_):
        raise OSError("[Errno -3] Temporary failure in name resolution\nmore detail")

    monkeypatch.setattr(download, fetcher, offline)
    monkeypatch.setenv("ALBERT_TF_CACHE", str(tmp_path))
    with pytest.raises(CheckpointError) as raised:
        download.resolve(name)
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"{name}: could not fetch {what}")
    assert "(OSError: [Errno -3] Temporary failure in name resolution)" in message
    assert f"the cache {tmp_path} does not hold it" in message
    assert "pass its folder instead, e.g. --init_checkpoint=path/to/" in message


def test_bare_name_goes_to_hugging_face(monkeypatch, tmp_path):
    calls = []

    def fake_snapshot_download(**kwargs):
        calls.append(kwargs)
        return str(tmp_path)

    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    monkeypatch.setenv("ALBERT_TF_CACHE", str(tmp_path / "cache"))
    assert download.resolve("albert_base_v2") == str(tmp_path)
    assert calls[0]["repo_id"] == "albert/albert-base-v2"
    assert "model.safetensors" in calls[0]["allow_patterns"]
    assert "pytorch_model.bin" not in calls[0]["allow_patterns"]


def test_google_tarball_is_fetched_and_unpacked(monkeypatch, tmp_path):
    _, _, folder = reference("tiny")
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz", dereference=True) as tar:
        tar.add(os.path.join(folder, "google"), arcname="albert_base")
    urls = []

    def fake_fetch(url, destination):
        urls.append(url)
        with open(destination, "wb") as f:
            f.write(archive.getvalue())

    monkeypatch.setattr(download, "_fetch_url", fake_fetch)
    monkeypatch.setenv("ALBERT_TF_CACHE", str(tmp_path))
    path = download.resolve("google:albert_base_v2")
    assert urls == ["https://storage.googleapis.com/albert_models/albert_base_v2.tar.gz"]
    assert sorted(os.listdir(path)) == sorted(os.listdir(os.path.join(folder, "google")))
    # Cached: a second resolve does not download again.
    assert download.resolve("google:albert_base_v2") == path and len(urls) == 1


def test_failed_google_download_leaves_no_cache(monkeypatch, tmp_path):
    def fake_fetch(url, destination):
        with open(destination, "wb") as f:
            f.write(b"not a tarball")

    monkeypatch.setattr(download, "_fetch_url", fake_fetch)
    monkeypatch.setenv("ALBERT_TF_CACHE", str(tmp_path))
    with pytest.raises(CheckpointError, match=r"could not fetch .*\(ReadError: "):
        download.resolve("google:albert_base_v2")
    assert not os.path.exists(tmp_path / "google" / "albert_base_v2")
    shutil.rmtree(tmp_path / "google")


def test_keras_hub_preset_uses_its_kaggle_handle(monkeypatch, tmp_path):
    import kagglehub

    handles = []
    monkeypatch.setattr(kagglehub, "model_download",
                        lambda handle: handles.append(handle) or str(tmp_path))
    assert download.resolve("keras_hub:albert_base_en_uncased") == str(tmp_path)
    assert handles[0].startswith("keras/albert/keras/albert_base_en_uncased/")
    with pytest.raises(CheckpointError, match="unknown keras-hub ALBERT preset"):
        download.resolve("keras_hub:albert_tiny")
