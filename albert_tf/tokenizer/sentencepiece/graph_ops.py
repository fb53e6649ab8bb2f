"""In-graph ALBERT normalization with character alignment (TensorFlow ops only).

The same computation as `normalization.aligned_emissions` and
`host._Alignment`, vectorized over the characters of a whole batch: every
input character gets its emission from constant tables built on the host
(`GraphTables`), and "nearest character with property X before/after me in
my row" is answered with a cumulative sum and a gather (`graph_text.prev_true`,
`next_true`) instead of a loop. Everything works on flat arrays of
characters (`n` = characters in the batch) with `row_ids` giving each one's
row; all index arithmetic is int32.
"""

import dataclasses

import numpy as np
import tensorflow as tf

from albert_tf.tokenizer import normalization
from albert_tf.tokenizer.graph_text import final_sigma, next_true, prev_true
from albert_tf.tokenizer.sentencepiece.vocab import WHOLE

TRANSPARENT = normalization.TRANSPARENT


# Extra rows after the mapping table's: fixed emissions of whitespace, quote
# pairs and final sigma.
EMPTY, SPACE, QUOTE, SIGMA = range(4)
_EXTRA_ROWS = ("", " ", '"', normalization.FINAL_SIGMA)


@dataclasses.dataclass
class GraphTables:
    """Host-built constants the graph needs (see `normalization.MappingTable`)."""

    keys: tf.Tensor          # int32 (k,) sorted code points with a mapping
    # Row r of the emissions (keys, then _EXTRA_ROWS) is the code points
    # values[starts[r]:starts[r] + lengths[r]]; is_space[r]: it is exactly " ".
    values: tf.Tensor
    starts: tf.Tensor
    lengths: tf.Tensor
    is_space: tf.Tensor
    left: tf.Tensor          # int32 (k,) edge case classes, lowercasing tables only
    right: tf.Tensor
    sigma: tf.Tensor         # bool (k,)
    whitespace: tf.Tensor    # int32 sorted code points
    class_starts: tf.Tensor  # int32: code points [starts[i], starts[i+1]) have class_values[i]
    class_values: tf.Tensor
    rule_ids: tf.RaggedTensor      # (vocab, None) int32: what each id becomes
    rule_offsets: tf.RaggedTensor  # (vocab, None) int32: WHOLE, COMMA or byte offset
    rule_widths: tf.RaggedTensor   # (vocab, None) int32 byte widths

    @classmethod
    def build(cls, lowercase, vocab_size, rules):
        """From the host tables; `rules` as `SpmVocab.digit_comma_replacements()`."""
        table = normalization.mapping_table(lowercase)
        starts, classes = (normalization.case_class_ranges() if lowercase else ((0,), (0,)))
        emitted = table.emissions + _EXTRA_ROWS
        lengths = np.array([len(e) for e in emitted], np.int32)
        rule_rows = [rules.get(i, ((i, WHOLE, 0),)) for i in range(vocab_size)]
        rule_values = np.array([e for row in rule_rows for e in row], np.int32).reshape(-1, 3)
        rule_lengths = np.array([len(row) for row in rule_rows], np.int64)

        def const(values, dtype=np.int32):  # via numpy: much faster than from Python lists
            return tf.constant(np.asarray(values, dtype))

        def ragged(column):
            return tf.RaggedTensor.from_row_lengths(const(rule_values[:, column]),
                                                    const(rule_lengths, np.int64))

        return cls(keys=const(table.keys),
                   values=const([ord(c) for e in emitted for c in e]),
                   starts=const(np.cumsum(lengths) - lengths),
                   lengths=const(lengths),
                   is_space=const([e == " " for e in emitted], bool),
                   left=const(table.left), right=const(table.right),
                   sigma=const(table.sigma, bool),
                   whitespace=const(normalization.whitespace_code_points()),
                   class_starts=const(starts), class_values=const(classes),
                   rule_ids=ragged(0), rule_offsets=ragged(1), rule_widths=ragged(2))


def _lookup(keys, values):
    """(hit, index): whether each value is in sorted `keys`, and where."""
    index = tf.minimum(tf.searchsorted(keys, values), tf.size(keys) - 1)
    return tf.gather(keys, index) == values, index


@dataclasses.dataclass
class Chars:
    """The characters of a batch of strings, flattened."""

    cp: tf.Tensor       # int32 (n,) code points (invalid UTF-8 -> U+FFFD)
    splits: tf.Tensor   # int32 (batch + 1,) row splits
    row_ids: tf.Tensor  # int32 (n,)
    pos: tf.Tensor      # int32 (n,) flat index

    @classmethod
    def decode(cls, strings):
        cps = tf.strings.unicode_decode(strings, "UTF-8", errors="replace",
                                        replacement_char=0xFFFD)
        return cls(cp=cps.flat_values, splits=tf.cast(cps.row_splits, tf.int32),
                   row_ids=tf.cast(cps.value_rowids(), tf.int32),
                   pos=tf.range(tf.size(cps.flat_values)))


def _quote_pairs(chars, quote):
    """(head, tail): first and second characters of each `quote*2` pair, left to right."""
    is_quote = chars.cp == ord(quote)
    prev_other = prev_true(~is_quote, chars.row_ids, inclusive=False)
    next_other = next_true(~is_quote, chars.row_ids, inclusive=False)
    run_start = tf.where(prev_other >= 0, prev_other + 1, tf.gather(chars.splits, chars.row_ids))
    run_end = tf.where(next_other >= 0, next_other, tf.gather(chars.splits[1:], chars.row_ids))
    k = chars.pos - run_start
    head = is_quote & (k % 2 == 0) & (k + 1 < run_end - run_start)
    return head, is_quote & (k % 2 == 1)


@dataclasses.dataclass
class Emitted:
    """The normalized text of a batch and what each input character contributed."""

    text: tf.Tensor    # string (batch,): `preprocess_text` of each input
    widths: tf.Tensor  # int32 (n,): UTF-8 bytes each character emitted
    solid: tf.Tensor   # bool (n,): emitted something other than " "
    anchor: tf.Tensor  # bool (n,): emitted something, or is whitespace


def _has_before_after(mask, chars):
    """Whether each position's row has a True strictly before / after it."""
    counts = tf.concat([[0], tf.math.cumsum(tf.cast(mask, tf.int32))], 0)  # Trues in [0, j)
    first = tf.gather(counts, tf.gather(chars.splits, chars.row_ids))
    last = tf.gather(counts, tf.gather(chars.splits[1:], chars.row_ids))
    return tf.gather(counts, chars.pos) > first, last > tf.gather(counts, chars.pos + 1)


def _emission_rows(chars, tables, lowercase):
    """Row of the emission table for each character; -1 where it emits itself."""
    hit, index = _lookup(tables.keys, chars.cp)
    k = tf.size(tables.keys)
    row = tf.where(hit, index, -1)
    # Whitespace: " ".join(text.strip().split()) keeps one space per inner run.
    is_space, _ = _lookup(tables.whitespace, chars.cp)
    solid_before, solid_after = _has_before_after(~is_space, chars)
    previous = tf.gather(tf.concat([[True], is_space], 0), chars.pos)  # is_space[pos - 1]
    starts_row = chars.pos == tf.gather(chars.splits, chars.row_ids)
    keep = is_space & (starts_row | ~previous) & solid_before & solid_after
    row = tf.where(is_space, tf.where(keep, k + SPACE, k + EMPTY), row)
    # The quote and sigma rules need scans; most batches have neither, so skip them.
    pair = tf.concat([chars.cp[1:] == chars.cp[:-1], [False]], 0) & ~tf.concat(
        [starts_row[1:], [True]], 0) & ((chars.cp == ord("`")) | (chars.cp == ord("'")))
    no = tf.zeros_like(is_space)
    head, tail = tf.cond(tf.reduce_any(pair), lambda: _all_quote_pairs(chars), lambda: (no, no))
    row = tf.where(head, k + QUOTE, tf.where(tail, k + EMPTY, row))
    if lowercase:
        sigma = hit & tf.gather(tables.sigma, index)
        final = tf.cond(tf.reduce_any(sigma), lambda: _final_sigma(
            chars, tables, hit, index, sigma, (is_space, keep, head, tail)), lambda: no)
        row = tf.where(final, k + SIGMA, row)
    return row, is_space


def _all_quote_pairs(chars):
    heads, tails = zip(*(_quote_pairs(chars, q) for q in "`'"))
    return heads[0] | heads[1], tails[0] | tails[1]


def emit(chars, tables, lowercase):
    """`preprocess_text` of every row, aligned to the input characters: `Emitted`."""
    row, is_space = _emission_rows(chars, tables, lowercase)
    own = row < 0
    row = tf.maximum(row, 0)
    lengths = tf.where(own, 1, tf.gather(tables.lengths, row))  # code points emitted
    source = tf.repeat(tf.range(tf.size(chars.cp)), lengths)   # emitted cp -> its character
    within = tf.range(tf.size(source)) - tf.gather(tf.math.cumsum(lengths, exclusive=True), source)
    table_cp = tf.gather(tables.values, tf.gather(tf.gather(tables.starts, row), source) + within)
    cp = tf.where(tf.gather(own, source), tf.gather(chars.cp, source), table_cp)
    utf8 = 1 + tf.cast(cp >= 0x80, tf.int32) + tf.cast(cp >= 0x800, tf.int32) + tf.cast(
        cp >= 0x10000, tf.int32)
    widths = tf.math.unsorted_segment_sum(utf8, source, tf.size(chars.cp))
    batch = tf.size(chars.splits) - 1
    row_lengths = tf.math.unsorted_segment_sum(lengths, chars.row_ids, batch)
    text = tf.strings.unicode_encode(
        tf.RaggedTensor.from_row_lengths(cp, tf.cast(row_lengths, tf.int64)), "UTF-8")
    solid = (widths > 0) & (own | ~tf.gather(tables.is_space, row))
    return Emitted(text=text, widths=widths, solid=solid, anchor=(widths > 0) | is_space)


def _final_sigma(chars, tables, hit, index, sigma, overrides):
    """Where a capital sigma must become final sigma (Python's `str.lower`)."""
    is_space, keep, head, tail = overrides
    own = tf.gather(tables.class_values,
                    tf.searchsorted(tables.class_starts, chars.cp, side="right") - 1)
    left = tf.where(hit, tf.gather(tables.left, index), own)
    right = tf.where(hit, tf.gather(tables.right, index), own)
    # " " and '"' are neither cased nor ignorable; emptied characters are transparent.
    fixed = tf.where(keep | head, normalization.OTHER, TRANSPARENT)
    left = tf.where(is_space | head | tail, fixed, left)
    right = tf.where(is_space | head | tail, fixed, right)
    return final_sigma(sigma, left, right, chars.row_ids)


# Whitespace in ASCII for Python's str.split: \t \n \v \f \r, \x1c-\x1f and space.
_ASCII_SPACE_RUNS = "[\\t-\\r\\x1c- ]+"


def _ascii_rules(strings, lowercase):
    """`preprocess_text` for rows whose only changes are ASCII ones (see `normalize`)."""
    text = tf.strings.regex_replace(strings, _ASCII_SPACE_RUNS, " ")
    text = tf.strings.regex_replace(text, "^ | $", "")
    text = tf.strings.regex_replace(text, "``", '"')  # RE2 and str.replace both go
    text = tf.strings.regex_replace(text, "''", '"')  # left to right, non-overlapping
    return tf.strings.lower(text) if lowercase else text  # ASCII letters only


def normalize(strings, tables, lowercase):
    """`preprocess_text` of a batch, string (batch,) -> (batch,), without alignment.

    Most rows of real text have no non-ASCII character that normalization
    changes (curly quotes and dashes map to themselves): for those, a few
    regex ops give the same result as `emit`, which only runs on the others.
    Rows with U+FFFD (where invalid UTF-8 may hide) take the full path too.
    """
    chars = Chars.decode(strings)
    hit, _ = _lookup(tables.keys, chars.cp)
    is_space, _ = _lookup(tables.whitespace, chars.cp)
    special = (chars.cp >= 0x80) & (hit | is_space | (chars.cp == 0xFFFD))
    batch = tf.size(chars.splits) - 1
    slow = tf.math.unsorted_segment_max(tf.cast(special, tf.int32), chars.row_ids, batch) > 0
    slow_rows = tf.cast(tf.where(slow)[:, 0], tf.int32)
    fast_rows = tf.cast(tf.where(~slow)[:, 0], tf.int32)
    fast = _ascii_rules(tf.gather(strings, fast_rows), lowercase)
    full = emit(Chars.decode(tf.gather(strings, slow_rows)), tables, lowercase).text
    return tf.dynamic_stitch([fast_rows, slow_rows], [fast, full])


def apply_rules(ids, tables):
    """The digit-comma rule on ragged ids (batch, None) -> (batch, None)."""
    return tf.gather(tables.rule_ids, ids).merge_dims(1, 2)
