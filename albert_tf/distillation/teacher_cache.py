"""The teacher's outputs on the training examples, computed once and kept on disk.

A large teacher then makes one pass over the data, not one per epoch. The
outputs are written in shards of `shard_size` examples
(`<directory>/shard-00000.npz`, ...), each complete or absent (atomic
writes): a pass that is stopped resumes at the first missing shard. The
folder's name is a hash of the teacher's weights file and of the features,
so a changed teacher or data set never reads stale outputs.
"""

import os

import numpy as np

from albert_tf.errors import RunStopped
from albert_tf.io_utils import atomic_file
from albert_tf.progress import Progress
from albert_tf.training import engine

SHARD_SIZE = 2048


def shard_path(directory, index):
    return os.path.join(directory, f"shard-{index:05d}.npz")


def teacher_outputs(teacher, strategy, features, names, directory, batch_size, batch_length,
                    shard_size=SHARD_SIZE, verbose=True):
    """`{name: array}`: the teacher's outputs `names` on every example of
    `features`, in example order (per-token outputs padded to
    `max_seq_length` with -inf), read from or written to `directory`."""
    os.makedirs(directory, exist_ok=True)
    total = len(features)
    shards = range(0, total, shard_size)
    missing = [begin for i, begin in enumerate(shards)
               if not os.path.isfile(shard_path(directory, i))]
    progress = Progress(sum(min(shard_size, total - b) for b in missing), "teacher outputs",
                        "examples", enabled=verbose and bool(missing))
    collected = {name: [] for name in names}
    for i, begin in enumerate(shards):
        path = shard_path(directory, i)
        if not os.path.isfile(path):
            part = features.subset(np.arange(begin, min(begin + shard_size, total)))
            try:
                outputs = engine.predict(teacher, strategy, part, batch_size, batch_length,
                                         progress=None)
            except KeyboardInterrupt:
                raise RunStopped(
                    f"interrupted in the teacher's pass over the training examples ({i} of "
                    f"{len(shards)} shards of {shard_size} kept in {directory}); run the same "
                    "command again to continue from there") from None
            with atomic_file(path, "wb") as f:
                np.savez(f, **{name: outputs[name] for name in names})
            progress.update(len(part))
        with np.load(path) as shard:
            for name in names:
                collected[name].append(shard[name])
    progress.close()
    return {name: np.concatenate(parts) for name, parts in collected.items()}
