"""Overlapping windows of texts longer than the model's input, and their average.

`WindowPacker` is the one implementation of `--long_inputs=window` for
sentence (pair) classification and regression: fine-tuning runs it over
numpy (eagerly) to featurize every split, and the exported SavedModel runs
it in its graph, so training, evaluation and serving see the same windows.
`window_mean` averages the windows' outputs back to one row per text, in
evaluation on the host and in the served graph alike. `window_plan` is the
closed form of sliding windows that `WindowPacker` and SQuAD's document
windows (`albert_tf.steps.squad_windows`) share.

The windows of one text (a budget of `m = max_seq_length - 2` tokens, `- 3`
for a pair):

- One segment of `n` tokens: window k holds tokens `[k * step, k * step + m)`
  (the last one shorter), `1 + ceil(max(n - m, 0) / step)` windows
  (`window_plan`).
- A pair: the longer segment is windowed (`b` when they are equally long, as
  the reference truncation trims `b` first) and the shorter one is repeated
  whole in every window, cut to half the budget if it is longer than that;
  each window is `[CLS] a [SEP] b [SEP]` in the usual order and segment ids.
- `step` is `--window_stride` (at most the windowed segment's room `w`); 0
  means half the room, `max(w // 2, 1)`.

A text that fits is one window equal to `SegmentPacker`'s packing of it.
"""

import keras
import tensorflow as tf

from albert_tf.steps.packing import Packer, _as_ragged, _check_length, take


def window_plan(num_tokens, room, step):
    """The sliding windows of texts of `num_tokens` (B,) tokens, `room` (B,) tokens
    a window, starts `step` (B,) apart (`0 < step <= room`), in closed form.

    Returns:
        `(count, text, k, start, length)`: `count` (B,) windows per text (one,
        empty, for no tokens); per window (W,), its text (ascending), its rank
        k in the text, its first token `k * step` and its number of tokens.
    """
    count = 1 + (tf.maximum(num_tokens - room, 0) + step - 1) // step
    text = tf.repeat(tf.range(tf.size(count)), count)
    k = tf.range(tf.size(text)) - tf.gather(tf.math.cumsum(count, exclusive=True), text)
    start = k * tf.gather(step, text)
    length = tf.minimum(tf.gather(num_tokens, text) - start, tf.gather(room, text))
    return count, text, k, start, length


def window_mean(values, text, num_texts):
    """The mean of each text's window rows: `(num_windows, ...)` -> `(num_texts, ...)`.

    text: int `(num_windows,)`, the text each window belongs to (every text
        has at least one). Numpy in, a tensor out (`.numpy()` on the host).
    """
    values = tf.convert_to_tensor(values)
    return tf.math.unsorted_segment_mean(values, tf.cast(text, tf.int32),
                                         tf.cast(num_texts, tf.int32))


@keras.saving.register_keras_serializable(package="albert_tf")
class WindowPacker(Packer):
    """Packs each text (pair) into as many overlapping windows as it needs.

    Args:
        max_seq_length: every window's length (>= 2, >= 3 for pairs).
        stride: tokens between the starts of consecutive windows (0: half
            the room of the windowed segment).
        cls_id, sep_id, pad_id: special token ids.

    Call arguments:
        ids_a: int ids ragged `(batch_size, None)` (or dense), no special tokens.
        ids_b: optional second segment, same batch size.

    Returns:
        dict of int32 tensors: `token_ids`, `segment_ids`, `padding_mask`
        `(num_windows, max_seq_length)`, and `text` `(num_windows,)`, the
        batch row of each window (ascending; every row has one at least).
    """

    def __init__(self, max_seq_length, stride, cls_id, sep_id, pad_id, **kwargs):
        super().__init__(max_seq_length, cls_id, sep_id, pad_id, **kwargs)
        if isinstance(stride, bool) or not isinstance(stride, int) or stride < 0:
            raise ValueError(f"stride must be an integer >= 0, got {stride!r}")
        self.stride = stride

    def call(self, ids_a, ids_b=None):
        a, _ = _as_ragged(ids_a, "ids_a")
        len_a = tf.cast(a.row_lengths(), tf.int32)
        if ids_b is None:
            b, len_b, budget, pair = None, tf.zeros_like(len_a), self.max_seq_length - 2, False
        else:
            _check_length(self.max_seq_length, pair=True)
            b, _ = _as_ragged(ids_b, "ids_b")
            len_b, budget, pair = tf.cast(b.row_lengths(), tf.int32), self.max_seq_length - 3, True
        # Per text (B,): which segment is windowed, what the other keeps, the room and step.
        window_a = len_a > len_b
        fixed = tf.where(window_a, len_b, len_a)
        windowed = tf.where(window_a, len_a, len_b)
        keep = tf.where(len_a + len_b <= budget, fixed, tf.minimum(fixed, budget // 2))
        room = budget - keep  # >= 1
        step = tf.minimum(room, self.stride) if self.stride else tf.maximum(room // 2, 1)
        _, text, _, start, length = window_plan(windowed, room, step)  # per window (W,)
        keep_w, is_a = tf.gather(keep, text), tf.gather(window_a, text)
        a_start, a_len = tf.where(is_a, start, 0), tf.where(is_a, length, keep_w)
        b_start, b_len = tf.where(is_a, 0, start), tf.where(is_a, keep_w, length)
        return self._pack(a, a_start, a_len, b, b_start, b_len, text, pair)

    def _pack(self, a, a_start, a_len, b, b_start, b_len, text, pair):
        """`[CLS] a[a_start:][:a_len] [SEP] (b[b_start:][:b_len] [SEP])` per window."""
        p = tf.range(self.max_seq_length)[None, :]  # (1, m)
        a_len, b_len = a_len[:, None], b_len[:, None]  # (W, 1)
        sep_a = a_len + 1
        last = sep_a + b_len + 1 if pair else sep_a
        in_a = (p >= 1) & (p <= a_len)
        a_index = (tf.gather(tf.cast(a.row_splits, tf.int32), text) + a_start)[:, None] + p - 1
        token_ids = take(a.flat_values, a_index, in_a, self.pad_id)
        if pair:
            in_b = (p > sep_a) & (p < last)
            b_index = ((tf.gather(tf.cast(b.row_splits, tf.int32), text) + b_start)[:, None]
                       + p - sep_a - 1)
            token_ids = tf.where(in_b, take(b.flat_values, b_index, in_b, self.pad_id),
                                 token_ids)
        token_ids = tf.where(p == 0, self.cls_id,
                             tf.where((p == sep_a) | (p == last), self.sep_id, token_ids))
        in_sequence = p <= last
        return {"token_ids": tf.where(in_sequence, token_ids, self.pad_id),
                "segment_ids": tf.cast((p > sep_a) & in_sequence, tf.int32),
                "padding_mask": tf.cast(in_sequence, tf.int32),
                "text": text}

    def get_config(self):
        return {**super().get_config(), "stride": self.stride}


def consecutive_windows(ids, max_seq_length, cls_id, sep_id, pad_id, values=()):
    """Each text's ids cut into consecutive windows of `max_seq_length - 2` tokens,
    each `[CLS] window [SEP]` (a text of no tokens is one window `[CLS] [SEP]`):
    token classification's windows, the same in featurization and in the served graph.

    Args:
        ids: int32 ragged `(batch_size, None)`, no special tokens.
        max_seq_length: every window's length (>= 3).
        cls_id, sep_id, pad_id: special token ids.
        values: `(ragged, fill)` pairs, each ragged shaped as `ids` (one value a
            token), placed in the windows as the ids are, `fill` elsewhere.

    Returns:
        dict: `token_ids` int32 `(windows, max_seq_length)`; `tokens` int32
        `(windows,)` the text's tokens in each window (no specials); `text`
        int32 `(windows,)` the text of each window (ascending); `where` int32
        `(total tokens, 2)` each token's (window, column); `values` the list
        of `(windows, max_seq_length)` tensors of `values`.
    """
    window = max_seq_length - 2
    n = tf.cast(ids.row_lengths(), tf.int32)
    count = tf.maximum(1, (n + window - 1) // window)  # windows per text
    base = tf.cumsum(count, exclusive=True)
    text = tf.repeat(tf.range(tf.shape(n)[0]), count)  # (windows,)
    index = tf.range(tf.shape(text)[0]) - tf.gather(base, text)
    tokens = tf.clip_by_value(tf.gather(n, text) - index * window, 0, window)
    owner = tf.cast(ids.value_rowids(), tf.int32)
    position = tf.range(tf.shape(owner)[0]) - tf.gather(tf.cast(ids.row_starts(), tf.int32),
                                                        owner)
    where = tf.stack([tf.gather(base, owner) + position // window,
                      position % window + 1], 1)  # (tokens, 2)
    columns = tf.range(max_seq_length)[None, :]
    shape = tf.stack([tf.shape(text)[0], max_seq_length])
    token_ids = tf.fill(shape, tf.cast(pad_id, tf.int32))
    token_ids = tf.where(columns == 0, cls_id, token_ids)
    token_ids = tf.where(columns == tokens[:, None] + 1, sep_id, token_ids)
    token_ids = tf.tensor_scatter_nd_update(token_ids, where, tf.cast(ids.flat_values, tf.int32))
    placed = [tf.tensor_scatter_nd_update(tf.fill(shape, tf.cast(fill, v.dtype)), where,
                                          v.flat_values) for v, fill in values]
    return {"token_ids": token_ids, "tokens": tokens, "text": text, "where": where,
            "values": placed}
