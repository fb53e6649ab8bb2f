"""Cloze blanks: a passage's blanks, the window of context around each, its rows packed.

A cloze passage holds blanks (CHID's `#idiom000123#`) and a list of candidates
shared by its blanks. Each blank is one multiple-choice question over those
candidates, each candidate scored on one sequence as CLUE's baseline builds it
(CLUEbenchmark/CLUE `baselines/models_pytorch/mrc_pytorch/preprocess/CHID_preprocess.py`):

    [CLS] candidate [SEP] left context [blank] right context [SEP]

in one segment (the baseline's segment ids are all 0), the blank answered as
one `blank_id` token (its `[unused1]`) and the passage's other blanks as
`mask_width` `[MASK]`s each. Featurization (`tasks/chid`) runs these steps
eagerly over a split's passages, the cloze serving graph in its graph:

- `blank_texts`: a passage's texts between its blanks, and the blanks as written;
- `join_blanks`: the texts' ids joined with one placeholder id per blank, and
  where each blank is;
- `ClozePacker`: each blank's window of context (`windows`), then each
  (blank, candidate) row packed (`__call__`).
"""

import re

import tensorflow as tf

from albert_tf.steps.packing import SegmentPacker, slice_rows

# The blanks are marked with this control character before the passage is split
# at them; a control character spells no token, and any in the passage is dropped first.
MARK = "\x1f"
# What stands for a blank in the joined ids: no vocabulary has a negative id.
PLACEHOLDER = -1


def blank_texts(passages, pattern, replacements=()):
    """The texts around each passage's blanks, and the blanks as written.

    passages: string `(batch,)`.
    pattern: an RE2 pattern that matches one blank (CHID: `#idiom[0-9]*#`).
    replacements: `(old, new)` literal texts replaced in the passage first, in
        order (the characters CLUE's baseline rewrites before tokenizing).

    Returns `(texts, blanks)`: ragged string `(batch, blanks + 1)`, the text
    before each blank then the text after the last one; and ragged string
    `(batch, blanks)`, the blanks.
    """
    text = tf.strings.regex_replace(passages, MARK, "")
    for old, new in replacements:
        text = tf.strings.regex_replace(text, re.escape(old), new.replace("\\", "\\\\"))
    marked = tf.strings.regex_replace(text, f"({pattern})", MARK + r"\1" + MARK)
    parts = tf.strings.split(marked, sep=MARK)  # text, blank, text, ..., text
    position = tf.ragged.range(parts.row_lengths())
    return (tf.ragged.boolean_mask(parts, position % 2 == 0),
            tf.ragged.boolean_mask(parts, position % 2 == 1))


def join_blanks(piece_ids):
    """A passage's ids from the ids of its texts (`blank_texts`), a `PLACEHOLDER`
    between each two: one id per blank.

    piece_ids: int32 ragged `(batch, blanks + 1, None)`.

    Returns `(ids, positions)`: int32 ragged `(batch, None)`, and int32 ragged
    `(batch, blanks)`, where each blank's placeholder is in its row of `ids`.
    """
    pieces = piece_ids.values  # (texts, None): every text of the batch
    count = tf.cast(piece_ids.row_lengths(), tf.int32)  # texts per passage
    row = tf.cast(piece_ids.value_rowids(), tf.int32)
    first = tf.gather(tf.cast(piece_ids.row_splits[:-1], tf.int32), row)  # its passage's first
    followed = tf.range(tf.shape(row)[0]) < first + tf.gather(count, row) - 1  # a blank after
    filler = tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.reduce_sum(tf.cast(followed, tf.int32))], PLACEHOLDER),
        tf.cast(followed, tf.int64))
    joined = tf.concat([tf.cast(pieces, tf.int32), filler], axis=1)
    ids = piece_ids.with_values(joined).merge_dims(1, 2)
    # A blank's placeholder ends its text: the joined lengths before it, in its passage.
    ends = tf.cumsum(tf.cast(joined.row_lengths(), tf.int32))
    passage_start = tf.gather(tf.concat([[0], ends], 0), first)
    at = ends - 1 - passage_start
    return ids, tf.RaggedTensor.from_row_lengths(tf.boolean_mask(at, followed),
                                                 tf.cast(tf.maximum(count - 1, 0), tf.int64))


def _rows_of(value, rows):
    """A ragged `(rows, 1)` of `value` in every row."""
    return tf.RaggedTensor.from_tensor(tf.fill([rows, 1], tf.cast(value, tf.int32)))


class ClozePacker:
    """Packs a blank's (blank, candidate) rows as CLUE's CHID baseline does.

    Args:
        max_seq_length: output length (>= 6).
        cls_id, sep_id, pad_id, mask_id: special token ids.
        blank_id: the id the answered blank reads as (CHID: `[unused1]`).
        mask_width: the `[MASK]`s each other blank of the passage reads as.

    A candidate keeps its first `(max_seq_length - 4) // 2` ids, and the
    window of context is what fits beside the blank's longest candidate:
    `budget = max_seq_length - 4 - longest` ids of context, in which the
    other blanks count one id each. The window is centred on the blank,
    `budget // 2` ids before it; where the passage ends sooner on one side,
    the other side takes what is left (`add_tokens_for_around`). The other
    blanks are then widened to `mask_width` `[MASK]`s and each side cut back
    to its count from the far end (the baseline's `tokens_l[-num_l:]`,
    `tokens_r[:num_r]`). One difference: where a passage is shorter than the
    window and its blank past the middle, the baseline's left slice starts
    at a negative index and wraps around (it drops left context); here every
    id before the blank is kept.
    """

    def __init__(self, max_seq_length, cls_id, sep_id, pad_id, mask_id, blank_id, mask_width):
        if isinstance(max_seq_length, bool) or not isinstance(max_seq_length, int) \
                or max_seq_length < 6:
            raise ValueError(f"max_seq_length must be an integer >= 6 ([CLS] candidate [SEP] "
                             f"context [blank] context [SEP]), got {max_seq_length!r}")
        self.packer = SegmentPacker(max_seq_length, cls_id, sep_id, pad_id)
        self.max_seq_length = max_seq_length
        self.sep_id, self.mask_id, self.blank_id = sep_id, mask_id, blank_id
        self.mask_width = mask_width
        self.candidate_limit = (max_seq_length - 4) // 2

    def candidates(self, ids):
        """Each candidate's kept ids: ragged `(rows, None)` -> its first `candidate_limit`."""
        rows = tf.shape(ids.row_lengths())[0]
        return slice_rows(ids, tf.zeros([rows], tf.int32), tf.fill([rows], self.candidate_limit))

    def _widened(self, ids):
        """Each `PLACEHOLDER` of ragged `ids` as `mask_width` `[MASK]`s."""
        values = ids.flat_values
        blank = tf.equal(values, PLACEHOLDER)
        repeats = tf.where(blank, self.mask_width, 1)
        lengths = tf.math.unsorted_segment_sum(repeats, tf.cast(ids.value_rowids(), tf.int32),
                                               tf.cast(ids.nrows(), tf.int32))
        return tf.RaggedTensor.from_row_lengths(
            tf.repeat(tf.where(blank, self.mask_id, values), repeats),
            tf.cast(lengths, tf.int64), validate=False)

    def windows(self, ids, position, longest):
        """Each blank's context: `left [blank] right`, int32 ragged `(rows, None)`.

        ids: int32 ragged `(rows, None)`, the blank's passage (`join_blanks`).
        position: int32 `(rows,)`, where the blank is in its row.
        longest: int32 `(rows,)`, the most ids a candidate of the blank keeps.
        """
        budget = self.max_seq_length - 4 - longest
        before = position
        after = tf.cast(ids.row_lengths(), tf.int32) - position - 1
        left = tf.minimum(before, tf.maximum(budget // 2, budget - after))
        right = tf.minimum(after, budget - left)
        lefts = self._widened(slice_rows(ids, position - left, left))
        rights = self._widened(slice_rows(ids, position + 1, right))
        widened = tf.cast(lefts.row_lengths(), tf.int32)
        rows = tf.shape(position)[0]
        return tf.concat([slice_rows(lefts, widened - left, left),
                          _rows_of(self.blank_id, rows),
                          slice_rows(rights, tf.zeros_like(right), right)], axis=1)

    def __call__(self, candidate_ids, window_ids):
        """`[CLS] candidate [SEP] window [SEP]` rows: `SegmentPacker`'s dict of int32
        `(rows, max_seq_length)` (`token_ids`, `segment_ids` all 0, `padding_mask`)
        of int32 ragged `(rows, None)` candidates (kept) and windows."""
        rows = tf.cast(candidate_ids.nrows(), tf.int32)
        return self.packer(tf.concat([candidate_ids, _rows_of(self.sep_id, rows), window_ids],
                                     axis=1))
