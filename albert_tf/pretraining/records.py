"""Pretraining instances as TFRecord files of `tf.train.Example`s, and back.

The records are google-research/albert's: `create_pretraining_data.py` writes
the same features and `run_pretraining.py` reads these files. One record per
instance, every feature a fixed-length list, zero-padded:

| feature                | length      | content (int64; the weights float)   | read as        |
|------------------------|-------------|--------------------------------------|----------------|
| `input_ids`            | seq_length  | `[CLS] A [SEP] B [SEP]`, masked, 0s  | token_ids      |
| `input_mask`           | seq_length  | 1 for real tokens, then 0            | padding_mask   |
| `segment_ids`          | seq_length  | 0 `[CLS] A [SEP]`, 1 `B [SEP]`, 0s   | segment_ids    |
| `token_boundary`       | seq_length  | 1 at word starts and `[CLS]`/`[SEP]` | (not read)     |
| `masked_lm_positions`  | predictions | positions predicted, ascending, 0s   | mask_positions |
| `masked_lm_ids`        | predictions | the original ids there, then 0       | mask_ids       |
| `masked_lm_weights`    | predictions | 1.0 per prediction, then 0.0         | mask_weights   |
| `next_sentence_labels` | 1           | 0 in order; 1 swapped or B random    | sop_label      |

(`next_sentence_labels` holds the sentence-order label: the reference kept
BERT's name. `token_boundary` is what its `run_pretraining.py
--masked_lm_budget` masks on the fly from.)

This module is the one place where the record names are translated to this
project's (keras-hub's), which `pretraining_dataset` yields. The reader also
takes the records albert_tf wrote before (layout `albert_tf_v1`: the Python
names as feature names, no `token_boundary`), and a mix of both.
"""

import glob

import numpy as np
import tensorflow as tf

GOOGLE, ALBERT_TF_V1 = "google", "albert_tf_v1"
SEQUENCE, PREDICTIONS, ONE = "sequence", "predictions", "one"
# (Python name, name in Google's records, length, type), in the reader's order.
FEATURES = (
    ("token_ids", "input_ids", SEQUENCE, tf.int64),
    ("segment_ids", "segment_ids", SEQUENCE, tf.int64),
    ("padding_mask", "input_mask", SEQUENCE, tf.int64),
    ("mask_positions", "masked_lm_positions", PREDICTIONS, tf.int64),
    ("mask_ids", "masked_lm_ids", PREDICTIONS, tf.int64),
    ("mask_weights", "masked_lm_weights", PREDICTIONS, tf.float32),
    ("sop_label", "next_sentence_labels", ONE, tf.int64),
)
RECORD_NAMES = {GOOGLE: {name: stored for name, stored, _, _ in FEATURES},
                ALBERT_TF_V1: {name: name for name, _, _, _ in FEATURES}}
INPUT_KEYS = ("token_ids", "segment_ids", "padding_mask", "mask_positions")
LABEL_KEYS = ("mask_ids", "mask_weights", "sop_label")
SHUFFLE_BUFFER = 10_000


def _lengths(max_seq_length, max_predictions_per_seq):
    return {SEQUENCE: max_seq_length, PREDICTIONS: max_predictions_per_seq, ONE: 1}


def feature_spec(max_seq_length, max_predictions_per_seq, layout=GOOGLE):
    """The `tf.io.parse_example` spec of the features read, by their names in `layout`."""
    lengths = _lengths(max_seq_length, max_predictions_per_seq)
    names = RECORD_NAMES[layout]
    return {names[name]: tf.io.FixedLenFeature([lengths[length]], dtype)
            for name, _, length, dtype in FEATURES}


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
        "input_ids": _ints(_padded(instance.token_ids, max_seq_length)),
        "input_mask": _ints(_padded(np.ones(length), max_seq_length)),
        "segment_ids": _ints(_padded(instance.segment_ids, max_seq_length)),
        "token_boundary": _ints(_padded(instance.word_starts, max_seq_length)),
        "masked_lm_positions": _ints(_padded(instance.mask_positions, max_predictions_per_seq)),
        "masked_lm_ids": _ints(_padded(instance.mask_ids, max_predictions_per_seq)),
        "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(value=weights)),
        "next_sentence_labels": _ints([int(instance.sop_label)]),
    }
    example = tf.train.Example(features=tf.train.Features(feature=feature))
    # `feature` is a protobuf map, serialized in an order that may change from
    # one process to the next unless asked to be deterministic (sorted keys).
    return example.SerializeToString(deterministic=True)


def _files(file_pattern):
    patterns = [file_pattern] if isinstance(file_pattern, str) else list(file_pattern)
    files = sorted({f for p in patterns for f in glob.glob(p)})
    if not files:
        raise ValueError(f"no TFRecord file matches {file_pattern!r}")
    return files


def record_layout(path, max_seq_length, max_predictions_per_seq):
    """The layout of the records in `path` (`GOOGLE` or `ALBERT_TF_V1`), from its
    first record; None for an empty file.

    Raises:
        ValueError: naming the file, when its records are not pretraining
            records or were written with other lengths.
    """
    first = next(iter(tf.data.TFRecordDataset(path).take(1)), None)
    if first is None:
        return None
    feature = tf.train.Example.FromString(first.numpy()).features.feature
    layouts = [k for k, names in RECORD_NAMES.items() if set(names.values()) <= set(feature)]
    if not layouts:
        raise ValueError(
            f"{path}: not pretraining records: features {sorted(feature)}; expected Google's "
            f"({', '.join(RECORD_NAMES[GOOGLE].values())}) or albert_tf's earlier "
            f"({', '.join(RECORD_NAMES[ALBERT_TF_V1].values())})")
    lengths = _lengths(max_seq_length, max_predictions_per_seq)
    flags = {SEQUENCE: "max_seq_length", PREDICTIONS: "max_predictions_per_seq"}
    for name, _, length, _ in FEATURES:
        stored = RECORD_NAMES[layouts[0]][name]
        kind = feature[stored].WhichOneof("kind")  # None for a feature without values
        size = len(getattr(feature[stored], kind).value) if kind else 0
        if size != lengths[length]:
            raise ValueError(f"{path}: {stored} holds {size} values per record; "
                             f"{flags.get(length, 'the format')} is {lengths[length]}")
    return layouts[0]


def _parser(layouts, max_seq_length, max_predictions_per_seq):
    """A function of a batch of serialized records -> `{Python name: tensor}`."""
    specs = [feature_spec(max_seq_length, max_predictions_per_seq, k) for k in layouts]
    names = [RECORD_NAMES[k] for k in layouts]
    if len(layouts) == 1:
        return lambda records: _renamed(tf.io.parse_example(records, specs[0]), names[0])
    # Files of both layouts: every name parsed, a missing one filled with -1
    # (ids, masks and weights are never negative), and each record's own kept.
    spec = {stored: tf.io.FixedLenFeature(f.shape, f.dtype, default_value=np.full(f.shape, -1))
            for layout_spec in specs for stored, f in layout_spec.items()}

    def parse(records):
        parsed = tf.io.parse_example(records, spec)
        out = _renamed(parsed, names[0])
        for layout_names in names[1:]:
            present = parsed[layout_names["token_ids"]][:, :1] >= 0  # (batch, 1)
            out = {name: tf.where(present, value, out[name])
                   for name, value in _renamed(parsed, layout_names).items()}
        return out

    return parse


def _renamed(parsed, names):
    """`{Python name: tensor}` from tensors keyed by their stored `names`."""
    return {name: parsed[stored] for name, stored in names.items()}


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
        file_pattern: a glob (or a list of globs) of the shards: Google's
            records, albert_tf's earlier ones, or both (see the module docstring).
        batch_size: examples per batch. With `repeat`, every batch is full
            (static shapes for XLA/TPU); without it, the last may be smaller.
        max_seq_length, max_predictions_per_seq: the lengths the records were
            written with (checked against each file's first record).
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

    Raises:
        ValueError: no file matches; a file holds other records or other lengths.
    """
    files = _files(file_pattern)
    found = {record_layout(f, max_seq_length, max_predictions_per_seq) for f in files}
    layouts = [k for k in RECORD_NAMES if k in found] or [GOOGLE]
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
    parse = _parser(layouts, max_seq_length, max_predictions_per_seq)
    dataset = dataset.map(lambda records: _to_model_inputs(parse(records)),
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
