"""`Features`: featurized examples as dense numpy arrays, in memory or memory-mapped.

A split's features are cached on disk as a folder of `.npy` files (one per
array) and read back memory-mapped, so a training set larger than memory is
batched from the page cache. While `cached` builds a split, `new_array`
allocates large arrays as files in the folder being written (a task that
allocates its arrays with it featurizes a million rows in bounded memory);
outside `cached`, and for small arrays, it allocates in memory.
"""

import contextlib
import dataclasses
import hashlib
import json
import os

import numpy as np

from albert_tf.io_utils import atomic_directory, atomic_file

META_FILE = "features.json"
LENGTHS = "__lengths__"
# Arrays from this size are files while a cache is being built (smaller ones stay in memory).
MEMMAP_BYTES = 16 * 2 ** 20
_ALLOCATION = {"directory": None, "count": 0}


@contextlib.contextmanager
def allocating_in(directory):
    """`new_array` allocates files in `directory` inside this block."""
    previous = dict(_ALLOCATION)
    _ALLOCATION.update(directory=directory, count=0)
    try:
        yield
    finally:
        _ALLOCATION.update(previous)


def new_array(shape, dtype):
    """A zero-filled array: a memory-mapped `.npy` file in the features folder
    being built (`allocating_in`) when it is large, else in memory."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape)) * dtype.itemsize
    directory = _ALLOCATION["directory"]
    if directory is None or size < MEMMAP_BYTES:
        return np.zeros(shape, dtype)
    _ALLOCATION["count"] += 1
    path = os.path.join(directory, f".array-{_ALLOCATION['count']}.npy")
    return np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=tuple(shape))


@dataclasses.dataclass
class Features:
    """Per-example arrays of a task, ready to batch.

    arrays: name -> array with examples on axis 0. Arrays shaped as
        `token_ids` is, `(num_examples, max_seq_length)` or, for examples of
        several sequences (multiple choice), `(num_examples, num_sequences,
        max_seq_length)`, are per-token (e.g. `token_ids`, `segment_ids`) and
        are cut on their token axis to each batch's padded length, and so
        are arrays of more axes that begin as `token_ids` does (e.g. a
        teacher's per-token logits, `(num_examples, max_seq_length,
        num_tags)`); others (labels, positions) are per-example.
    lengths: `(num_examples,)` number of real tokens of each example (of its
        longest sequence); the generated `padding_mask` is `(batch, length)`
        from it, and a task of several sequences per example keeps its own
        per-sequence lengths in an array.
    label_keys: the arrays that are training targets (given to the loss),
        the others are model inputs.
    host_keys: arrays that stay on the host (e.g. character offsets for
        decoding answers): never batched or sent to the model.
    """

    arrays: dict
    lengths: np.ndarray
    label_keys: tuple = ()
    host_keys: tuple = ()

    def __post_init__(self):
        n = len(self.lengths)
        for name, array in self.arrays.items():
            if len(array) != n:
                raise ValueError(f"Features.{name} has {len(array)} rows, expected {n}")

    def __len__(self):
        return len(self.lengths)

    @property
    def max_seq_length(self):
        return self.arrays["token_ids"].shape[-1]

    @property
    def token_axis(self):
        """The axis of `token_ids` (and of every per-token array) that holds the tokens."""
        return self.arrays["token_ids"].ndim - 1

    def is_token_level(self, name):
        array, tokens = self.arrays[name], self.arrays["token_ids"]
        return array.ndim >= tokens.ndim and array.shape[1:tokens.ndim] == tokens.shape[1:]

    def subset(self, indices):
        """The examples at `indices`, as `Features` of their own."""
        return Features({k: v[indices] for k, v in self.arrays.items()}, self.lengths[indices],
                        self.label_keys, self.host_keys)

    def with_arrays(self, arrays, label=True):
        """These features with `arrays` (name -> array, a row per example) added,
        as training targets (`label`) or as model inputs."""
        keys = tuple(k for k in arrays if k not in self.label_keys)
        return Features({**self.arrays, **arrays}, self.lengths,
                        self.label_keys + (keys if label else ()), self.host_keys)

    def signature(self):
        """`tf.TensorSpec`s of `batch()`'s output: batch size and length unknown."""
        import tensorflow as tf

        specs = {"padding_mask": tf.TensorSpec((None, None), tf.int32),
                 "example_index": tf.TensorSpec((None,), tf.int32)}
        for name, array in self.device_arrays().items():
            shape = (None,) + array.shape[1:]
            if self.is_token_level(name):
                shape = shape[:self.token_axis] + (None,) + shape[self.token_axis + 1:]
            specs[name] = tf.TensorSpec(shape, tf.as_dtype(array.dtype))
        return specs

    def device_arrays(self):
        return {k: v for k, v in self.arrays.items() if k not in self.host_keys}

    def batch(self, indices, length):
        """The examples at `indices` (-1: an all-padding dummy), cut to `length`.

        Returns a dict of arrays with `padding_mask` and `example_index` added.
        """
        indices = np.asarray(indices)
        safe = np.maximum(indices, 0)
        real = (indices >= 0)
        out = {}
        for name, array in self.device_arrays().items():
            rows = array[safe]
            if self.is_token_level(name):
                rows = rows[(slice(None),) * self.token_axis + (slice(0, length),)]
            out[name] = np.where(real.reshape((-1,) + (1,) * (rows.ndim - 1)), rows,
                                 np.zeros_like(rows))
        lengths = np.where(real, self.lengths[safe], 0)
        out["padding_mask"] = (np.arange(length)[None, :] < lengths[:, None]).astype(np.int32)
        out["example_index"] = indices.astype(np.int32)
        return out

    def save(self, path):
        """Writes the folder `path` (atomically): a `.npy` file per array."""
        with atomic_directory(path) as tmp:
            self._write(tmp)

    def _write(self, directory):
        """The arrays as `<name>.npy` files in `directory`: one `new_array`
        mapped there is flushed and renamed, any other written."""
        names = list(self.arrays)
        for name, array in [*self.arrays.items(), (LENGTHS, self.lengths)]:
            target = os.path.join(directory, f"{name}.npy")
            source = getattr(array, "filename", None)
            if isinstance(array, np.memmap) and source and \
                    os.path.dirname(os.path.abspath(source)) == os.path.abspath(directory):
                array.flush()
                os.replace(source, target)
            else:
                with atomic_file(target, "wb") as f:
                    np.save(f, np.asarray(array))
        with atomic_file(os.path.join(directory, META_FILE)) as f:
            json.dump({"arrays": names, "label_keys": list(self.label_keys),
                       "host_keys": list(self.host_keys)}, f)

    @classmethod
    def load(cls, path):
        """Features saved in the folder `path`, memory-mapped (read-only)."""
        with open(os.path.join(path, META_FILE), encoding="utf-8") as f:
            meta = json.load(f)

        def read(name):
            return np.load(os.path.join(path, f"{name}.npy"), mmap_mode="r")

        return cls({name: read(name) for name in meta["arrays"]}, read(LENGTHS),
                   tuple(meta["label_keys"]), tuple(meta["host_keys"]))


def cache_key(*parts):
    """A short stable hash of the things features depend on (files, settings)."""
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, str) and os.path.isfile(part):
            stat = os.stat(part)
            part = f"{os.path.abspath(part)}:{stat.st_size}:{stat.st_mtime_ns}"
        digest.update(repr(part).encode())
    return digest.hexdigest()[:16]


def cached(path, build):
    """`Features` from the cache folder `path`, built with `build()` if absent
    (its large `new_array`s allocated in the folder being written) and read
    back memory-mapped; `path` None: built in memory, not cached."""
    if not path:
        return build()
    if not os.path.isfile(os.path.join(path, META_FILE)):
        with atomic_directory(path) as tmp, allocating_in(tmp):
            build()._write(tmp)
    return Features.load(path)
