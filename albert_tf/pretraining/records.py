"""Pretraining instances as TFRecord files of `tf.train.Example`s, and back.

One record per instance, every feature a fixed-length list, zero-padded:

| feature          | type  | length                  | content                                 |
|------------------|-------|-------------------------|-----------------------------------------|
| `token_ids`      | int64 | max_seq_length          | `[CLS] A [SEP] B [SEP]`, masked, then 0 |
| `segment_ids`    | int64 | max_seq_length          | 0 `[CLS] A [SEP]`, 1 `B [SEP]`, then 0  |
| `padding_mask`   | int64 | max_seq_length          | 1 for real tokens, 0 padding            |
| `mask_positions` | int64 | max_predictions_per_seq | positions predicted, ascending, then 0  |
| `mask_ids`       | int64 | max_predictions_per_seq | original ids there, then 0              |
| `mask_weights`   | float | max_predictions_per_seq | 1.0 per real prediction, then 0.0       |
| `sop_label`      | int64 | 1                       | 0 in order, 1 swapped (NSP: random B)   |

The names are this project's (keras-hub's), not the reference's
(`input_ids`, `input_mask`, `masked_lm_*`, `next_sentence_labels`).
"""

import glob
import os
import tempfile

import numpy as np
import tensorflow as tf

INPUT_KEYS = ("token_ids", "segment_ids", "padding_mask", "mask_positions")
LABEL_KEYS = ("mask_ids", "mask_weights", "sop_label")
SHUFFLE_BUFFER = 10_000


def feature_spec(max_seq_length, max_predictions_per_seq):
    """The `tf.io.parse_example` spec of the records."""
    sequence = tf.io.FixedLenFeature([max_seq_length], tf.int64)
    predictions = tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64)
    return {
        "token_ids": sequence, "segment_ids": sequence, "padding_mask": sequence,
        "mask_positions": predictions, "mask_ids": predictions,
        "mask_weights": tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32),
        "sop_label": tf.io.FixedLenFeature([1], tf.int64),
    }


def _padded(values, length):
    out = np.zeros(length, dtype=np.int64)
    out[:len(values)] = values
    return out.tolist()


def _ints(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def serialize_instance(instance, max_seq_length, max_predictions_per_seq):
    """One `instances.Instance` as the bytes of a padded `tf.train.Example`."""
    length, num_masked = len(instance.token_ids), len(instance.mask_positions)
    if length > max_seq_length or num_masked > max_predictions_per_seq:
        raise ValueError(f"instance of {length} tokens and {num_masked} predictions exceeds "
                         f"{max_seq_length} / {max_predictions_per_seq}")
    weights = [1.0] * num_masked + [0.0] * (max_predictions_per_seq - num_masked)
    feature = {
        "token_ids": _ints(_padded(instance.token_ids, max_seq_length)),
        "segment_ids": _ints(_padded(instance.segment_ids, max_seq_length)),
        "padding_mask": _ints(_padded(np.ones(length), max_seq_length)),
        "mask_positions": _ints(_padded(instance.mask_positions, max_predictions_per_seq)),
        "mask_ids": _ints(_padded(instance.mask_ids, max_predictions_per_seq)),
        "mask_weights": tf.train.Feature(float_list=tf.train.FloatList(value=weights)),
        "sop_label": _ints([int(instance.sop_label)]),
    }
    example = tf.train.Example(features=tf.train.Features(feature=feature))
    # `feature` is a protobuf map, serialized in an order that may change from
    # one process to the next unless asked to be deterministic (sorted keys).
    return example.SerializeToString(deterministic=True)


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


def _files(file_pattern):
    patterns = [file_pattern] if isinstance(file_pattern, str) else list(file_pattern)
    files = sorted({f for p in patterns for f in glob.glob(p)})
    if not files:
        raise ValueError(f"no TFRecord file matches {file_pattern!r}")
    return files


def _to_model_inputs(batch):
    """Parsed features -> `(inputs, labels)`, ints as int32, `sop_label` `(batch,)`."""
    inputs = {k: tf.cast(batch[k], tf.int32) for k in INPUT_KEYS}
    labels = {"mask_ids": tf.cast(batch["mask_ids"], tf.int32),
              "mask_weights": batch["mask_weights"],
              "sop_label": tf.cast(batch["sop_label"][:, 0], tf.int32)}
    return inputs, labels


def pretraining_dataset(file_pattern, batch_size, max_seq_length, max_predictions_per_seq,
                        shuffle_seed=None, repeat=True, shuffle_buffer=SHUFFLE_BUFFER):
    """A `tf.data.Dataset` of `(inputs, labels)` batches from the records.

    Args:
        file_pattern: a glob (or a list of globs) of the shards.
        batch_size: examples per batch. With `repeat`, every batch is full
            (static shapes for XLA/TPU); without it, the last may be smaller.
        max_seq_length, max_predictions_per_seq: the lengths the records were
            written with (a mismatch fails at parse time).
        shuffle_seed: None reads the files in name order, one record from
            each in turn (for up to 8 shards written by `ShardedWriter`, the
            order they were written in); an int shuffles files and records
            (a buffer of `shuffle_buffer`), the same way for the same seed.
        repeat: cycle through the data forever.

    Returns:
        Elements `(inputs, labels)`: inputs `token_ids`, `segment_ids`,
        `padding_mask` int32 `(batch_size, max_seq_length)`, `mask_positions`
        int32 `(batch_size, max_predictions_per_seq)`; labels `mask_ids` int32
        and `mask_weights` float32 `(batch_size, max_predictions_per_seq)`,
        `sop_label` int32 `(batch_size,)`.
    """
    files = _files(file_pattern)
    dataset = tf.data.Dataset.from_tensor_slices(files)
    if shuffle_seed is not None:
        dataset = dataset.shuffle(len(files), seed=shuffle_seed)
    if repeat:
        dataset = dataset.repeat()
    # deterministic=True: the interleaved order does not depend on timing.
    dataset = dataset.interleave(tf.data.TFRecordDataset, cycle_length=min(len(files), 8),
                                 num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if shuffle_seed is not None:
        dataset = dataset.shuffle(shuffle_buffer, seed=shuffle_seed)
    dataset = dataset.batch(batch_size, drop_remainder=repeat)
    spec = feature_spec(max_seq_length, max_predictions_per_seq)
    dataset = dataset.map(lambda records: _to_model_inputs(tf.io.parse_example(records, spec)),
                          num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return dataset.prefetch(tf.data.AUTOTUNE)


def read_records(file_pattern, max_seq_length, max_predictions_per_seq, limit=None):
    """The records, unshuffled, as one dict of numpy arrays (for tests and inspection).

    Returns:
        `{feature: array}` with the keys of `pretraining_dataset`'s inputs and
        labels, their dtypes and shapes, `limit` rows at most (all if None).
    """
    dataset = pretraining_dataset(file_pattern, 256, max_seq_length, max_predictions_per_seq,
                                  repeat=False)
    if limit is not None:
        dataset = dataset.unbatch().take(limit).batch(256)
    parts = {}
    for inputs, labels in dataset.as_numpy_iterator():
        for key, value in {**inputs, **labels}.items():
            parts.setdefault(key, []).append(value)
    if not parts:  # no records: empty arrays of the right shapes
        inputs, labels = dataset.element_spec
        return {k: np.zeros([0] + s.shape[1:].as_list(), s.dtype.as_numpy_dtype)
                for k, s in {**inputs, **labels}.items()}
    return {k: np.concatenate(v) for k, v in parts.items()}
