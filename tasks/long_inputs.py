"""Texts longer than `--max_seq_length` in the sentence (pair) classification and
regression tasks (GLUE, CLUE, `text_classification`, `text_regression`).

- `--long_inputs=truncate` (the default): the reference packing
  (`encode_pairs`, google-research/albert's `_truncate_seq_pair`), by the
  `SegmentPacker` layer of the exported graph mapped over the split
  (`albert_tf.data.mapped`); the run says how many texts of each split were cut.
- `--long_inputs=window`: every text is scored in overlapping windows
  (`albert_tf.steps.windows.WindowPacker`, `--window_stride`), the same
  layer over numpy here and inside the exported SavedModel. Training takes
  each window as an example with its text's label (a text of three windows
  weighs three times one of one window, as it has three times the words);
  evaluation, predictions and serving average the windows' logits per text
  (`window_mean`; multi-label: then the threshold).

A windowed split's `Features` have one row per window and a host array
`window_text` (the text of each window, ascending); `per_text` and
`text_labels` turn per-window rows back into per-text ones.
"""

import dataclasses

import numpy as np

from albert_tf.settings import NON_NEGATIVE, Settings, setting

LONG_INPUTS = ("truncate", "window")
WINDOW_TEXT = "window_text"


@dataclasses.dataclass(frozen=True, kw_only=True)
class LongInputOptions(Settings):
    """How the classification and regression tasks take texts longer than the model's input."""

    long_inputs: str = setting(
        "truncate", "Classification and regression: a text longer than --max_seq_length is cut "
        "(truncate) or scored in overlapping windows whose logits are averaged (window; "
        "training takes each window as an example with its text's label; of a pair, the "
        "longer text is windowed and the other repeated in each window).", choices=LONG_INPUTS)
    window_stride: int = setting(
        0, "With --long_inputs=window: tokens between the starts of consecutive windows "
        "(0: half a window).", rule=NON_NEGATIVE)

    def checks(self):
        return ((self.long_inputs == "window" or not self.window_stride,
                 f"window_stride={self.window_stride} needs long_inputs=window"),)


def encode_pairs(examples, tokenizer, max_seq_length):
    """Packed `[CLS] a [SEP] (b [SEP])` arrays of `examples`, (N, max_seq_length)."""
    arrays, lengths, _ = _encode_truncated(examples, tokenizer, max_seq_length)
    return arrays, lengths


def _ids(examples, tokenizer):
    ids_a = tokenizer.encode_batch([e.text_a for e in examples])
    ids_b = iter(tokenizer.encode_batch([e.text_b for e in examples if e.text_b is not None]))
    return ids_a, [next(ids_b) if e.text_b is not None else None for e in examples]


def _ragged_pair(ids_a, ids_b):
    """The split's ids as ragged tensors `(a, b or None)`; a pair task needs both texts."""
    from albert_tf.data.mapped import ragged_rows

    pair = any(b is not None for b in ids_b)
    if pair and any(b is None for b in ids_b):
        raise ValueError("every example of a pair task needs both texts (text_b is missing)")
    return ragged_rows(ids_a), ragged_rows(ids_b) if pair else None


def _encode_truncated(examples, tokenizer, max_seq_length, ids=None):
    from albert_tf.data.mapped import map_rows
    from albert_tf.steps import SegmentPacker

    a, b = _ragged_pair(*(ids or _ids(examples, tokenizer)))
    packer = SegmentPacker(max_seq_length, tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)
    arrays = map_rows(packer, (a,) if b is None else (a, b),
                      ("token_ids", "segment_ids", "padding_mask"))
    lengths = arrays.pop("padding_mask").sum(axis=1, dtype=np.int32)
    return arrays, lengths, None


def _encode_windows(examples, tokenizer, max_seq_length, stride, ids):
    from albert_tf.steps import WindowPacker

    packer = WindowPacker(max_seq_length, stride, tokenizer.cls_id, tokenizer.sep_id,
                          tokenizer.pad_id)
    try:
        windows = packer(*_ragged_pair(*ids))
    except ValueError as e:
        raise ValueError(f"--long_inputs=window: {e}") from None
    arrays = {name: windows[name].numpy() for name in ("token_ids", "segment_ids")}
    lengths = windows["padding_mask"].numpy().sum(axis=1).astype(np.int32)
    return arrays, lengths, windows["text"].numpy()


def encode(examples, tokenizer, max_seq_length, options):
    """`(arrays, lengths, window_text, cut)` of `examples` as `options` (a
    `LongInputOptions`) say: per example (`window_text` None) or per window;
    `cut`: how many examples do not fit in `max_seq_length` tokens."""
    ids = _ids(examples, tokenizer)
    cut = sum(len(a) + (len(b) + 3 if b is not None else 2) > max_seq_length
              for a, b in zip(*ids))
    if options is not None and options.long_inputs == "window":
        return (*_encode_windows(examples, tokenizer, max_seq_length, options.window_stride,
                                 ids), cut)
    return (*_encode_truncated(examples, tokenizer, max_seq_length, ids), cut)


def report_cut(cut, total, split, max_seq_length, options):
    """Says how many texts of a split are longer than the model's input (once, when the
    split is featurized), and what was done with them."""
    if not cut:
        return
    windows = options is not None and options.long_inputs == "window"
    done = ("scored in windows (--long_inputs=window)" if windows else
            "were truncated; --long_inputs=window scores all of each")
    name = "training" if split == "train" else split
    print(f"{cut:,} of {total:,} {name} texts ({100 * cut / max(total, 1):.1f}%) are longer "
          f"than {max_seq_length} tokens and {'are ' if windows else ''}{done}", flush=True)


def labelled_windows(window_text, labels):
    """The labels of every window (its text's), given per text."""
    return labels if window_text is None else labels[window_text]


def features_arrays(arrays, window_text):
    """`(arrays, host_keys)` for `Features`: with windows, `window_text` on the host."""
    if window_text is None:
        return arrays, ()
    return {**arrays, WINDOW_TEXT: window_text.astype(np.int32)}, (WINDOW_TEXT,)


def per_text(features, values):
    """Per-example rows of `values` (e.g. logits): a windowed split's windows averaged
    per text (`window_mean`, as the served graph averages them)."""
    if WINDOW_TEXT not in features.arrays:
        return values
    from albert_tf.steps import window_mean

    text = np.asarray(features.arrays[WINDOW_TEXT])
    return window_mean(np.asarray(values), text, int(text[-1]) + 1 if len(text) else 0).numpy()


def text_labels(features):
    """The labels of each text (a windowed split's: each text's first window's)."""
    labels = np.asarray(features.arrays["label"])
    if WINDOW_TEXT not in features.arrays:
        return labels
    text = np.asarray(features.arrays[WINDOW_TEXT])
    first = np.flatnonzero(np.r_[True, text[1:] != text[:-1]])
    return labels[first]


def features(examples, tokenizer, max_seq_length, options, split, labels=None):
    """`Features` of `examples` (labels per example, or None for a test split),
    per window with `--long_inputs=window`; reports the texts that do not fit."""
    from albert_tf.data import Features

    arrays, lengths, window_text, cut = encode(examples, tokenizer, max_seq_length, options)
    report_cut(cut, len(examples), split, max_seq_length, options)
    arrays, host_keys = features_arrays(arrays, window_text)
    if labels is None:
        return Features(arrays, lengths, host_keys=host_keys)
    arrays["label"] = labelled_windows(window_text, labels)
    return Features(arrays, lengths, label_keys=("label",), host_keys=host_keys)


def serving_stride(options):
    """What a serving module takes: the window stride, or None to truncate."""
    return options.window_stride if options is not None and \
        options.long_inputs == "window" else None


def serving_info(options):
    """What an export's description says of long inputs."""
    stride = serving_stride(options)
    return {"long_inputs": "truncate"} if stride is None else \
        {"long_inputs": "window", "window_stride": stride}
