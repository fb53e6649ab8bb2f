"""In-graph BERT `BasicTokenizer` with character alignment (TensorFlow ops only).

The same computation as `wordpiece.host` (tested): each input character gets
its kind and emission from constant tables built on the host
(`WordPieceTables`, from `chars`), then the emitted characters are
cut into words with cumulative sums. Everything works on flat arrays of a
whole batch: `n` input characters with `row` (their string), `m` emitted
characters with `owner` (the input character each came from), and the words,
whose pieces tensorflow-text's `FastWordpieceTokenizer` finds.
All index arithmetic is int32.
"""

import dataclasses

import numpy as np
import tensorflow as tf

from albert_tf.tokenizer.graph_text import final_sigma, next_true
from albert_tf.tokenizer.wordpiece import chars
from albert_tf.tokenizer.wordpiece.vocab import CONTINUATION


@dataclasses.dataclass
class WordPieceTables:
    """Host-built constants the graph needs."""

    prop_starts: tf.Tensor    # int32 (r,): code points [starts[k], starts[k+1]) have
    prop_values: tf.Tensor    # int32 (r,)  values[k] (`chars.property_ranges`)
    keys: tf.Tensor           # int32 (k,) sorted code points whose uncased emission differs
    value_starts: tf.Tensor   # int32 (k,): keys[i] emits values[starts[i]:starts[i] + lengths[i]]
    value_lengths: tf.Tensor  # int32 (k,)
    values: tf.Tensor         # int32 code points
    piece_chars: tf.Tensor    # int32 (vocabulary_size,): characters of text each id covers

    @classmethod
    def build(cls, tokens, lowercase):
        starts, values = chars.property_ranges()
        table = sorted(chars.emission_table().items()) if lowercase else []
        emissions = [e for _, e in table]
        lengths = np.array([len(e) for e in emissions], np.int32)

        def const(values):  # via numpy: much faster than from Python lists
            return tf.constant(np.asarray(values, np.int32).reshape(-1))

        return cls(prop_starts=const(starts), prop_values=const(values),
                   keys=const([ord(c) for c, _ in table]),
                   value_starts=const(np.cumsum(lengths) - lengths),
                   value_lengths=const(lengths),
                   values=const([ord(c) for e in emissions for c in e]),
                   piece_chars=const([len(t) - len(CONTINUATION) if t.startswith(CONTINUATION)
                                      else len(t) for t in tokens]))


@dataclasses.dataclass
class Words:
    """The words of a batch, and what offsets need to map them back."""

    text: tf.Tensor        # string (num_words,), UTF-8
    length: tf.Tensor      # int32 (num_words,) characters
    row: tf.Tensor         # int32 (num_words,) the string each word is in
    start: tf.Tensor       # int32 (num_words,) its first emitted character
    owner: tf.Tensor       # int32 (m,) the input character of each emitted one
    anchor_end: tf.Tensor  # int32 (n,) span end of a token ending at input character i
    row_splits: tf.Tensor  # int32 (batch + 1,) input characters per string
    num_rows: tf.Tensor    # int32 scalar


def _lookup_properties(code_points, tables):
    index = tf.searchsorted(tables.prop_starts, code_points, side="right") - 1
    return tf.gather(tables.prop_values, index)


def _emit(code_points, props, tables, lowercase, row):
    """`(emitted code points (m,), owner (m,), emission lengths (n,))`."""
    kind = props & chars.KIND_MASK
    silent = (kind == chars.BREAK) | (kind == chars.DROP)
    if lowercase:
        position = tf.searchsorted(tables.keys, code_points, side="left")
        safe = tf.minimum(position, tf.maximum(tf.size(tables.keys) - 1, 0))
        hit = (position < tf.size(tables.keys)) & tf.equal(
            tf.gather(tables.keys, safe), code_points)
        lengths = tf.where(hit, tf.gather(tables.value_lengths, safe), 1)
    else:
        hit = tf.zeros_like(silent)
        lengths = tf.ones_like(code_points)
    lengths = tf.where(silent, 0, lengths)
    n = tf.size(code_points, out_type=tf.int32)
    owner = tf.repeat(tf.range(n), lengths)
    offset = tf.range(tf.size(owner)) - tf.gather(tf.cumsum(lengths, exclusive=True), owner)
    emitted = tf.gather(code_points, owner)
    if lowercase:
        mapped = tf.gather(hit, owner)
        index = tf.gather(tf.gather(tables.value_starts, safe), owner) + offset
        emitted = tf.where(mapped, tf.gather(tables.values, tf.where(mapped, index, 0)), emitted)
        case = tf.bitwise.right_shift(props, chars.CASE_SHIFT)
        # Word breaks are OTHER in the tables: the context never crosses them.
        final = final_sigma(code_points == chars.CAPITAL_SIGMA, case, case, row)
        emitted = tf.where(tf.gather(final, owner), chars.FINAL_SIGMA, emitted)
    return emitted, owner, lengths


def split_words(strings, tables, lowercase):
    """BERT's `BasicTokenizer` on a batch: `strings` (batch,) -> `Words`."""
    decoded = tf.strings.unicode_decode(strings, "UTF-8", errors="replace",
                                        replacement_char=0xFFFD)
    code_points = decoded.flat_values                                   # (n,)
    row_splits = tf.cast(decoded.row_splits, tf.int32)                  # (batch + 1,)
    row = tf.cast(decoded.value_rowids(), tf.int32)                     # (n,)
    row_end = tf.gather(row_splits, row + 1)
    props = _lookup_properties(code_points, tables)
    kind = props & chars.KIND_MASK
    emitted, owner, lengths = _emit(code_points, props, tables, lowercase, row)

    # A word starts at an emitted character after a break, in a new row, or
    # at or after a character that is a word of its own (punctuation, CJK).
    alone = (tf.not_equal(_lookup_properties(emitted, tables) & chars.PUNCT_BIT, 0)
             | tf.equal(tf.gather(kind, owner), chars.CJK))                # (m,)
    breaks = tf.gather(tf.cumsum(tf.cast(kind == chars.BREAK, tf.int32)), owner)  # (m,)
    emitted_row = tf.gather(row, owner)                                 # (m,)
    changed = ((breaks[1:] != breaks[:-1]) | (emitted_row[1:] != emitted_row[:-1])
               | alone[1:] | alone[:-1])
    starts_word = tf.concat([tf.ones_like(alone[:1]), changed], 0)      # (m,)
    word_id = tf.cumsum(tf.cast(starts_word, tf.int32)) - 1
    start = tf.cast(tf.where(starts_word)[:, 0], tf.int32)              # (num_words,)
    text = tf.RaggedTensor.from_value_rowids(emitted, word_id, nrows=tf.size(start))
    # A character that emits nothing (a dropped control character, an accent)
    # belongs with the character before it; breaks never do.
    anchor = (lengths > 0) | (kind == chars.BREAK)
    return Words(text=tf.strings.unicode_encode(text, "UTF-8"),
                 length=tf.cast(text.row_lengths(), tf.int32),
                 row=tf.gather(emitted_row, start), start=start, owner=owner,
                 anchor_end=_or(next_true(anchor, row, inclusive=False), row_end),
                 row_splits=row_splits, num_rows=tf.size(row_splits) - 1)


def _or(index, default):
    """`index` where found (>= 0), else `default`."""
    return tf.where(index >= 0, index, default)


def piece_offsets(words, pieces, unk_id, tables):
    """Code point spans into each input string of `pieces` (ragged (num_words, None) ids).

    Returns `(starts, ends)`, int32 (num_tokens,), flat in token order.
    """
    ids, word = pieces.flat_values, tf.cast(pieces.value_rowids(), tf.int32)
    word_length = tf.gather(words.length, word)
    length = tf.where(ids == unk_id, word_length, tf.gather(tables.piece_chars, ids))
    before = tf.cumsum(length, exclusive=True)
    first_of_word = tf.gather(tf.cast(pieces.row_starts(), tf.int32), word)
    first = tf.gather(words.start, word) + before - tf.gather(before, first_of_word)
    row_start = tf.gather(words.row_splits, tf.gather(words.row, word))
    starts = tf.gather(words.owner, first) - row_start
    ends = tf.gather(words.anchor_end, tf.gather(words.owner, first + length - 1)) - row_start
    return starts, ends
