"""Sharded TFRecord output, written atomically as a set."""

import glob
import os
import tempfile

import tensorflow as tf


def shard_paths(prefix, num_shards):
    """`PREFIX-00000-of-0000N.tfrecord`, ... for every shard."""
    return [f"{prefix}-{i:05d}-of-{num_shards:05d}.tfrecord" for i in range(num_shards)]


def other_shards(prefix, paths):
    """Files named like shards of `prefix` that are not `paths` (an earlier run's,
    with another `num_shards`): a glob over the prefix would read them too."""
    found = glob.glob(glob.escape(prefix) + "-[0-9][0-9][0-9][0-9][0-9]-of-*.tfrecord")
    return sorted(set(found) - set(paths))


class ShardedWriter:
    """Writes records round-robin to `num_shards` files, atomically as a set.

    Each shard is written under a temporary name beside its final path; on a
    clean exit all are renamed into place, on an error all are deleted, so a
    reader never sees a half-written shard.
    """

    def __init__(self, prefix, num_shards):
        self.paths = shard_paths(prefix, num_shards)
        self.counts = [0] * num_shards
        self._temps, self._writers, self._next = [], [], 0

    def __enter__(self):
        folder = os.path.dirname(os.path.abspath(self.paths[0]))
        os.makedirs(folder, exist_ok=True)
        for path in self.paths:
            fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.tmp-", dir=folder)
            os.close(fd)
            self._temps.append(temp)
            self._writers.append(tf.io.TFRecordWriter(temp))
        return self

    def write(self, record):
        self._writers[self._next].write(record)
        self.counts[self._next] += 1
        self._next = (self._next + 1) % len(self._writers)

    def __exit__(self, kind, value, traceback):
        for writer in self._writers:
            writer.close()
        if kind is None:
            for temp, path in zip(self._temps, self.paths):
                os.chmod(temp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual mode
                os.replace(temp, path)
        else:
            for temp in self._temps:
                if os.path.exists(temp):
                    os.remove(temp)
        return False


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask
