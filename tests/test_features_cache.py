"""The featurized-split cache: a folder of .npy files, read back memory-mapped."""

import os

import numpy as np
import pytest

from albert_tf.data import Features, features as features_lib, new_array


def _features(n=5, length=6, allocate=np.zeros):
    tokens = allocate((n, length), np.int32)
    tokens[:] = np.arange(n * length).reshape(n, length)
    labels = allocate((n, 3), np.float32)
    labels[:] = np.eye(3)[np.arange(n) % 3]
    return Features({"token_ids": tokens, "label": labels, "offsets": np.ones((n, 2))},
                    np.arange(1, n + 1), label_keys=("label",), host_keys=("offsets",))


def test_a_cached_split_reloads_memory_mapped_and_equal(tmp_path):
    path = str(tmp_path / "train-abc")
    built = features_lib.cached(path, _features)
    assert sorted(os.listdir(path)) == ["__lengths__.npy", "features.json", "label.npy",
                                        "offsets.npy", "token_ids.npy"]
    assert isinstance(built.arrays["token_ids"], np.memmap)
    again = features_lib.cached(path, lambda: pytest.fail("built again"))
    reference = _features()
    for name, array in reference.arrays.items():
        np.testing.assert_array_equal(again.arrays[name], array)
    np.testing.assert_array_equal(again.lengths, reference.lengths)
    assert (again.label_keys, again.host_keys) == (("label",), ("offsets",))
    batch = again.batch([4, -1], 3)  # batches copy rows out of the mapped files
    np.testing.assert_array_equal(batch["token_ids"][0], [24, 25, 26])
    assert batch["padding_mask"].tolist() == [[1, 1, 1], [0, 0, 0]]


def test_large_arrays_are_built_as_files_in_the_folder_being_written(tmp_path, monkeypatch):
    monkeypatch.setattr(features_lib, "MEMMAP_BYTES", 64)
    seen = {}

    def build():
        built = _features(allocate=new_array)
        seen["token_ids"] = built.arrays["token_ids"]
        return built

    path = str(tmp_path / "train-big")
    loaded = features_lib.cached(path, build)
    # Allocated as a file beside the others while building, then renamed into place.
    assert isinstance(seen["token_ids"], np.memmap)
    assert os.path.dirname(seen["token_ids"].filename) != path  # the temporary folder
    assert not any(name.startswith(".array-") for name in os.listdir(path))
    np.testing.assert_array_equal(loaded.arrays["token_ids"], _features().arrays["token_ids"])
    # Outside a cache build, and below the size, arrays are in memory.
    assert type(new_array((2, 2), np.int32)) is np.ndarray


def test_an_interrupted_build_leaves_no_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(features_lib, "MEMMAP_BYTES", 64)

    def build():
        _features(allocate=new_array)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        features_lib.cached(str(tmp_path / "train-x"), build)
    assert os.listdir(tmp_path) == []
