"""In-graph character offsets of tokens (the `tokenize_with_offsets` path).

Maps SentencePiece's byte ranges in the normalized text back to characters of
the original text, with the rules of the package docstring; the host twin is
`host._Alignment`.
"""

import tensorflow as tf

from albert_tf.tokenizer.graph_text import next_true
from albert_tf.tokenizer.sentencepiece.vocab import COMMA, WHOLE


class _Bytes:
    """Global byte positions of the normalized text of a whole batch.

    Row r's normalized text occupies bytes [row_start[r], row_start[r] +
    row_bytes[r]); character i's emission starts at char_byte[i].
    """

    def __init__(self, chars, emitted):
        self.chars = chars
        self.char_byte = tf.math.cumsum(emitted.widths, exclusive=True)
        batch = tf.size(chars.splits) - 1
        self.row_bytes = tf.math.unsorted_segment_sum(emitted.widths, chars.row_ids, batch)
        self.row_start = tf.math.cumsum(self.row_bytes, exclusive=True)

    def owner(self, byte):
        """The character that emitted global byte `byte` (clipped to a valid index)."""
        n = tf.size(self.chars.cp)
        return tf.clip_by_value(tf.searchsorted(self.char_byte, byte, side="right") - 1,
                                0, tf.maximum(n - 1, 0))

    def row_end(self, rows):
        return tf.gather(self.row_start + self.row_bytes, rows)


def _skip_underline_space(layout, emitted, begin, end, rows):
    """`begin` moved past the whitespace that a leading "▁" stands for."""
    next_solid = tf.gather(next_true(emitted.solid, layout.chars.row_ids, inclusive=True),
                           layout.owner(begin))
    first_solid = tf.where(next_solid >= 0,
                           tf.gather(layout.char_byte, tf.maximum(next_solid, 0)),
                           layout.row_end(rows))
    return tf.where(begin < end, tf.minimum(end, tf.maximum(begin, first_solid)), begin)


def _apply_rules(ids, begin, end, tables):
    """The digit-comma rule on flat piece ids, with the byte ranges of the new pieces.

    Returns:
        `(new_ids, parent, new_begin, new_end)`: `new_ids` ragged (pieces, None);
        the rest flat over the new pieces, `parent` indexing the old ones.
    """
    new_ids = tf.gather(tables.rule_ids, ids)
    parent = tf.cast(new_ids.value_rowids(), tf.int32)
    offset = tf.gather(tables.rule_offsets, ids).flat_values
    width = tf.gather(tables.rule_widths, ids).flat_values
    p_begin, p_end = tf.gather(begin, parent), tf.gather(end, parent)
    sub_begin = tf.minimum(p_begin + offset, p_end - 1)
    sub_end = tf.minimum(p_begin + offset + width, p_end - 1)
    new_begin = tf.where(offset == WHOLE, p_begin, tf.where(offset == COMMA, p_end - 1, sub_begin))
    new_end = tf.where(offset == WHOLE, p_end, tf.where(offset == COMMA, p_end, sub_end))
    return new_ids, parent, new_begin, new_end


def spans(chars, emitted, pieces, tables):
    """Ids and character spans after the digit-comma rule.

    Args:
        chars: the input's `Chars`; emitted: its `Emitted`.
        pieces: `(ids, begins, ends)` from SentencePiece over `emitted.text`,
            ragged (batch, None), byte offsets per row.

    Returns:
        `(ids, starts, ends)`, ragged (batch, None) int32; the spans index the
        characters of each input string.
    """
    ids, begins, ends = pieces
    layout = _Bytes(chars, emitted)
    piece_rows = tf.cast(ids.value_rowids(), tf.int32)
    shift = tf.gather(layout.row_start, piece_rows)  # row-local -> global bytes
    begin = tf.cast(begins.flat_values, tf.int32) + shift
    end = tf.cast(ends.flat_values, tf.int32) + shift
    begin = _skip_underline_space(layout, emitted, begin, end, piece_rows)
    new_ids, parent, begin, end = _apply_rules(ids.flat_values, begin, end, tables)
    rows = tf.gather(piece_rows, parent)

    # Byte ranges -> characters; emptied characters attach to the one before.
    next_anchor = next_true(emitted.anchor, chars.row_ids, inclusive=False)
    row_end_char = tf.gather(chars.splits[1:], rows)
    after_last = tf.gather(next_anchor, layout.owner(end - 1))
    stop = tf.where(after_last >= 0, after_last, row_end_char)
    start = tf.where(begin < layout.row_end(rows), layout.owner(begin), row_end_char)
    stop = tf.where(begin < end, stop, start)  # empty ranges stay empty
    row_start_char = tf.gather(chars.splits, rows)
    lengths = tf.math.unsorted_segment_sum(tf.cast(new_ids.row_lengths(), tf.int32),
                                           piece_rows, tf.size(chars.splits) - 1)

    def ragged(values):  # int64 row splits, like every other RaggedTensor op's output
        return tf.RaggedTensor.from_row_lengths(values, tf.cast(lengths, tf.int64))

    return (ragged(new_ids.flat_values), ragged(start - row_start_char),
            ragged(stop - row_start_char))
