"""What the Chinese checkpoints added around the loaders: reading pytorch_model.bin without
PyTorch (and refusing anything but a state dict), brightmart's config and the variant's
accounting, and the published names up to the network boundary."""

import io
import json
import os
import pickle
import shutil
import sys
import tarfile
import types
import zipfile

import numpy as np
import pytest

import albert_tf
from albert_tf import accounting, config as config_lib
from albert_tf.checkpoints import CheckpointError, download, torch_bin
from albert_tf.checkpoints.weights import model_variables
from albert_tf.config import AlbertConfig
from albert_tf.models.pretraining import AlbertPretrainingModel
from conftest import REFERENCE_MODELS
from helpers import tiny_config

ZH = os.path.join(REFERENCE_MODELS, "zh_tiny")


# --- pytorch_model.bin ---

def test_bin_equals_safetensors_tensor_for_tensor():
    from safetensors.numpy import load_file

    state = torch_bin.read_state_dict(os.path.join(ZH, "hf_zh_bin", "pytorch_model.bin"))
    safe = load_file(os.path.join(ZH, "hf_zh", "model.safetensors"))
    assert set(state) == set(safe) | {"predictions.decoder.weight", "predictions.decoder.bias"}
    for name, value in safe.items():
        assert value.dtype == state[name].dtype and np.array_equal(value, state[name]), name


def _fake_torch(monkeypatch):
    """Modules named as PyTorch's, so that `pickle` writes the globals torch.save writes."""
    torch, utils = types.ModuleType("torch"), types.ModuleType("torch._utils")
    for name in ("FloatStorage", "HalfStorage", "BFloat16Storage", "LongStorage"):
        setattr(torch, name, type(name, (), {"__module__": "torch"}))

    def _rebuild_tensor_v2(*args):
        raise AssertionError("only pickled, never called")

    _rebuild_tensor_v2.__module__ = "torch._utils"
    _rebuild_tensor_v2.__qualname__ = "_rebuild_tensor_v2"
    utils._rebuild_tensor_v2 = _rebuild_tensor_v2
    torch._utils = utils
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch._utils", utils)
    return torch, utils


class _Tensor:
    def __init__(self, storage_type, key, raw, numel, offset, size, stride):
        self.storage = ("storage", storage_type, key, "cpu", numel)
        self.raw, self.args = raw, (offset, size, stride)

    def __reduce__(self):
        import collections

        rebuild = sys.modules["torch._utils"]._rebuild_tensor_v2
        return rebuild, (self.storage, *self.args, False, collections.OrderedDict())


def _torch_save(path, tensors):
    """A zip-format `torch.save` of {name: _Tensor}, written as PyTorch does."""
    import collections

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            return obj if isinstance(obj, tuple) and obj[:1] == ("storage",) else None

    buffer = io.BytesIO()
    Pickler(buffer, protocol=2).dump(collections.OrderedDict(tensors))
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl", buffer.getvalue())
        archive.writestr("archive/byteorder", "little")
        for key, raw in {t.storage[2]: t.raw for t in tensors.values()}.items():
            archive.writestr(f"archive/data/{key}", raw)  # a shared storage once


def test_bin_strides_offsets_and_dtypes(monkeypatch, tmp_path):
    torch, _ = _fake_torch(monkeypatch)
    base = np.arange(12, dtype=np.float32)
    wide = np.array([1.5, -2.25, 3.0], np.float32)
    bf16 = (wide.view(np.uint32) >> 16).astype("<u2")
    _torch_save(str(tmp_path / "m.bin"), {
        # A transposed view with an offset: (3, 4) read with strides (1, 3) from element 0,
        # and a (2, 2) slice starting at element 5.
        "t": _Tensor(torch.FloatStorage, "0", base.tobytes(), 12, 0, (4, 3), (1, 4)),
        "s": _Tensor(torch.FloatStorage, "0", base.tobytes(), 12, 5, (2, 2), (4, 1)),
        "h": _Tensor(torch.HalfStorage, "1", np.float16([0.5, 7]).tobytes(), 2, 0, (2,), (1,)),
        "b": _Tensor(torch.BFloat16Storage, "2", bf16.tobytes(), 3, 0, (3,), (1,)),
        "n": _Tensor(torch.LongStorage, "3", np.int64([9]).tobytes(), 1, 0, (), ()),
    })
    state = torch_bin.read_state_dict(str(tmp_path / "m.bin"))
    np.testing.assert_array_equal(state["t"], base.reshape(3, 4).T)
    np.testing.assert_array_equal(state["s"], [[5, 6], [9, 10]])
    assert state["h"].dtype == np.float16 and state["h"].tolist() == [0.5, 7]
    assert state["b"].dtype == np.float32 and state["b"].tolist() == wide.tolist()
    assert state["n"].shape == () and int(state["n"]) == 9


def test_bin_tensor_past_its_storage_is_refused(monkeypatch, tmp_path):
    torch, _ = _fake_torch(monkeypatch)
    raw = np.zeros(4, np.float32).tobytes()
    _torch_save(str(tmp_path / "m.bin"),
                {"t": _Tensor(torch.FloatStorage, "0", raw, 4, 2, (3,), (1,))})
    with pytest.raises(CheckpointError, match=r"reaches past its storage of 4 elements"):
        torch_bin.read_state_dict(str(tmp_path / "m.bin"))


class _Malicious:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_bin_with_a_foreign_global_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "pytorch_model.bin"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl",
                         pickle.dumps({"albert.pooler.weight": _Malicious(marker)}, protocol=2))
    with pytest.raises(CheckpointError, match=rf"refusing to unpickle {os.system.__module__}"
                                              r"\.system: a state dict needs only"):
        torch_bin.read_state_dict(str(path))
    assert not marker.exists()


def test_legacy_pickle_is_refused_naming_the_way_out(tmp_path):
    path = tmp_path / "pytorch_model.bin"
    path.write_bytes(pickle.dumps({"a": 1}, protocol=2))
    with pytest.raises(CheckpointError, match=r"legacy \(pre-zip\) PyTorch pickle.*Install "
                                              r"PyTorch and re-save it.*safetensors"):
        torch_bin.read_state_dict(str(path))


def test_hf_folder_with_a_malicious_bin_fails_to_load(tmp_path):
    folder = tmp_path / "hf"
    folder.mkdir()
    shutil.copy(os.path.join(ZH, "hf_zh_bin", "config.json"), folder)
    with zipfile.ZipFile(folder / "pytorch_model.bin", "w") as archive:
        archive.writestr("archive/data.pkl", pickle.dumps(_Malicious(tmp_path / "ran")))
    with pytest.raises(CheckpointError, match="refusing to unpickle"):
        albert_tf.load_pretrained(str(folder))
    assert not (tmp_path / "ran").exists()


# --- config and accounting of the brightmart variant ---

def test_brightmart_config_translates_and_validates():
    with open(os.path.join(ZH, "brightmart", "albert_config_tiny.json"), encoding="utf-8") as f:
        values = json.load(f)
    config = config_lib.from_brightmart_json(values)
    assert (config.embedding_dim, config.hidden_dim, config.num_layers) == (16, 32, 3)
    assert (config.embedding_projection, config.normalize_first) == ("word", False)
    assert config_lib.from_brightmart_json({**values, "ln_type": "preln"}).normalize_first
    assert not config_lib.from_brightmart_json(
        {k: v for k, v in values.items() if k != "ln_type"}).normalize_first
    with pytest.raises(ValueError, match=r"x.json: ln_type='midln' is not supported"):
        config_lib.from_brightmart_json({**values, "ln_type": "midln"}, source="x.json")
    with pytest.raises(ValueError, match=r"x.json: hidden_act='swish' is not supported"):
        config_lib.from_brightmart_json({**values, "hidden_act": "swish"}, source="x.json")


@pytest.mark.parametrize("field, value, message", [
    ("embedding_projection", "after", "embedding_projection must be one of"),
    ("normalize_first", "yes", "normalize_first must be true or false, got 'yes'"),
])
def test_variant_fields_validated(field, value, message):
    with pytest.raises(ValueError, match=message):
        tiny_config(**{field: value})


def test_variant_cannot_be_written_as_google_config():
    with pytest.raises(ValueError, match="embedding_projection='word'.*Google TF1 format"):
        config_lib.to_google_json(tiny_config(embedding_projection="word"))
    with pytest.raises(ValueError, match="normalize_first=True.*Google TF1 format"):
        config_lib.to_google_json(tiny_config(normalize_first=True))


def test_saved_configs_without_the_new_fields_still_read():
    values = tiny_config().to_dict()
    del values["embedding_projection"], values["normalize_first"]
    assert AlbertConfig.from_dict(values) == tiny_config()


@pytest.mark.parametrize("projection", ["summed", "word"])
@pytest.mark.parametrize("normalize_first", [False, True])
def test_accounting_counts_the_variant_as_built(projection, normalize_first):
    config = tiny_config(embedding_projection=projection, normalize_first=normalize_first)
    model = AlbertPretrainingModel(albert_tf.AlbertBackbone(config))
    costs = accounting.component_costs(config, seq_length=7, heads=True)
    assert model.backbone.count_params() == accounting.backbone_params(config)
    distinct = model_variables(model).values()  # the tied decoder counted once
    assert sum(int(np.prod(v.shape)) for v in distinct) == accounting.total(costs).params


def test_word_projection_moves_parameters_from_e_to_h():
    summed = AlbertConfig.preset("albert_base")
    word = summed.replace(embedding_projection="word")
    # positions + segments + LayerNorm go from E to H wide; the projection loses its bias.
    grown = (summed.max_sequence_length + summed.num_segments + 2) * (768 - 128) - 768
    assert accounting.backbone_params(word) - accounting.backbone_params(summed) == grown


# --- published names, up to the network boundary ---

def test_google_zh_name_fetches_the_tarball_and_loads(monkeypatch, tmp_path):
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        tar.add(os.path.join(ZH, "google_zh"), arcname="albert_base_zh")
    urls = []

    def fake_fetch(url, destination):
        urls.append(url)
        with open(destination, "wb") as f:
            f.write(archive.getvalue())

    monkeypatch.setattr(download, "_fetch_url", fake_fetch)
    monkeypatch.setenv("ALBERT_TF_CACHE", str(tmp_path))
    for name in ("albert_base_zh", "google:albert_base_zh"):
        path = download.resolve(name)
        assert os.path.isfile(os.path.join(path, "model.ckpt-best.index"))
    assert urls == ["https://storage.googleapis.com/albert_models/albert_base_zh.tar.gz"]
    assert albert_tf.detect_format(path) == "google"
    albert_tf.load_pretrained("albert_base_zh", with_heads=True)
    assert albert_tf.load_tokenizer("albert_base_zh", host=True).vocabulary_size == 21128


def _fake_hub(monkeypatch, tmp_path, source):
    """A `snapshot_download` serving folder `source` by its allow_patterns."""
    import fnmatch

    import huggingface_hub

    calls, snapshot = [], tmp_path / "snapshot"
    snapshot.mkdir()

    def fake_snapshot_download(repo_id, allow_patterns, cache_dir):
        calls.append((repo_id, list(allow_patterns)))
        for name in os.listdir(source):
            if any(fnmatch.fnmatch(name, p) for p in allow_patterns):
                shutil.copy(os.path.join(source, name), snapshot)
        return str(snapshot)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    monkeypatch.setenv("ALBERT_TF_CACHE", str(tmp_path / "cache"))
    return calls


def test_hf_repository_without_safetensors_brings_its_bin(monkeypatch, tmp_path):
    calls = _fake_hub(monkeypatch, tmp_path, os.path.join(ZH, "hf_zh_bin"))
    path = download.resolve("albert_chinese_tiny")
    assert [c[0] for c in calls] == ["voidful/albert_chinese_tiny"] * 2
    assert "vocab.txt" in calls[0][1] and "pytorch_model.bin" not in calls[0][1]
    assert calls[1][1] == download.HF_TORCH_PATTERNS
    assert sorted(os.listdir(path)) == ["config.json", "pytorch_model.bin", "vocab.txt"]
    albert_tf.load_pretrained(path, with_heads=True)


def test_hf_repository_with_safetensors_skips_the_bin(monkeypatch, tmp_path):
    source = tmp_path / "repo"
    shutil.copytree(os.path.join(ZH, "hf_zh"), source)
    shutil.copy(os.path.join(ZH, "hf_zh_bin", "pytorch_model.bin"), source)
    calls = _fake_hub(monkeypatch, tmp_path, str(source))
    path = download.resolve("hf:clue/albert_chinese_tiny")
    assert len(calls) == 1 and "pytorch_model.bin" not in os.listdir(path)


@pytest.mark.parametrize("name, target", [
    ("albert_xxlarge_zh", "google:albert_xxlarge_zh"),
    ("albert_chinese_xxlarge", "hf:voidful/albert_chinese_xxlarge"),
    ("albert_base_chinese_cluecorpussmall", "hf:uer/albert-base-chinese-cluecorpussmall"),
    ("ckiplab_albert_tiny_chinese", "hf:ckiplab/albert-tiny-chinese"),
    ("albert_base_v2", "hf:albert/albert-base-v2"),
    ("albert_tiny_zh", "brightmart:albert_tiny"),
])
def test_published_names(name, target):
    assert download.PUBLISHED[name] == target and download.is_published_name(name)


def test_brightmart_zip_is_fetched_unpacked_and_loaded(monkeypatch, tmp_path):
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        for name in os.listdir(os.path.join(ZH, "brightmart")):
            zipped.write(os.path.join(ZH, "brightmart", name), f"albert_tiny/{name}")
    urls = []

    def fake_fetch(url, destination):
        urls.append(url)
        with open(destination, "wb") as f:
            f.write(archive.getvalue())

    monkeypatch.setattr(download, "_fetch_url", fake_fetch)
    monkeypatch.setenv("ALBERT_TF_CACHE", str(tmp_path))
    path = download.resolve("albert_tiny_zh")
    assert download.resolve("brightmart:albert_tiny") == path
    assert urls == ["https://storage.googleapis.com/albert_zh/albert_tiny.zip"]
    assert albert_tf.detect_format(path) == "brightmart"
    albert_tf.load_pretrained("albert_tiny_zh", with_heads=True)


def test_brightmart_google_layout_release_uses_the_google_loader(tmp_path):
    """brightmart's `*_google` zips: its file names, Google's variables."""
    source = os.path.join(ZH, "google_zh")
    shutil.copy(os.path.join(source, "albert_config.json"), tmp_path / "albert_config_tiny_g.json")
    shutil.copy(os.path.join(source, "vocab_chinese.txt"), tmp_path / "vocab.txt")
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(os.path.join(source, "model.ckpt-best" + suffix),
                    tmp_path / ("albert_model.ckpt" + suffix))
    assert albert_tf.detect_format(str(tmp_path)) == "google"
    albert_tf.load_pretrained(str(tmp_path), with_heads=True)


def test_bin_tensors_larger_than_their_storage_or_the_config_are_refused_unallocated(
        monkeypatch, tmp_path):
    import resource

    torch, _ = _fake_torch(monkeypatch)
    one = np.float32([1]).tobytes()
    for size, stride in (((250000, 1000), (0, 0)), ((4000000, 1000), (0, 1))):
        path = str(tmp_path / f"{size[0]}.bin")
        _torch_save(path, {"w": _Tensor(torch.FloatStorage, "0", one, 1, 0, size, stride)})
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with pytest.raises(CheckpointError) as e:
            torch_bin.read_state_dict(path)
        assert str(e.value).startswith(path) and ("overlap" in str(e.value)
                                                  or "reaches past" in str(e.value))
        assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 * 1024  # KiB
    path = str(tmp_path / "big.bin")
    raw = np.zeros(24, np.float32).tobytes()
    _torch_save(path, {"w": _Tensor(torch.FloatStorage, "0", raw, 24, 0, (4, 6), (6, 1))})
    assert torch_bin.read_state_dict(path, max_elements=24)["w"].shape == (4, 6)
    with pytest.raises(CheckpointError, match=r"24 elements, more than any tensor of the "
                                              r"model's config \(20\)"):
        torch_bin.read_state_dict(path, max_elements=20)
