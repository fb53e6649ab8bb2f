"""Viterbi ties decided as the reference `sentencepiece` decides them (TensorFlow ops only).

SentencePiece's unigram Viterbi keeps, for each position, the best path
score ending there; candidates come by increasing start, and a later one
replaces the kept one only if strictly greater. Segmentations of equal exact
score (the same pieces in another order: "666" as "6 66" or "66 6") are
therefore decided by the rounding of the running path score, which depends
on all the text before them, and the two implementations round differently:

- the `sentencepiece` Python package (0.2.x; the reference, `HostTokenizer`)
  adds in float32 and compares rounded sums (`vocab.ViterbiPieces`);
- tensorflow-text's bundled SentencePiece 0.1.96 computes each candidate in
  double (its user-defined-piece bonus `length * max_score - 0.1` is a
  double, which promotes every score), compares it unrounded with the kept
  float32, and scores user-defined pieces about -0.1 where the reference
  scores them about 0.1 * (bytes - 1).

No rule on the pieces, and no change of scores, reproduces that. So `repair`
re-runs the reference's float32 Viterbi (`graph_viterbi`) wherever the
outcome can differ. The path splits into segments at boundaries every
segmentation has (where no piece contains the two characters on either
side: before each "▁", around <unk>, mostly before punctuation); a segment
of one piece whose best split scores more than a few ulps lower is safe; every
other segment is re-decided from its exact start score, a sequential float32
sum over the row (`_running_scores`). A re-decided segment can change the
start scores of later ones, so this repeats until none changes.
"""

import dataclasses
import functools

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.tokenizer.sentencepiece import graph_viterbi

# A one-piece segment is re-decided when its split margin is below
# (|start score| + _SLACK) * _ULPS: 2^-18 is 32 float32 ulps, more than the
# rounding of any path through one piece.
_ULPS = 2.0 ** -18
_SLACK = 512.0
_CODE_POINTS = 1 << 21


@dataclasses.dataclass(eq=False)  # hashed by identity: a `tf.function` argument
class TieTables:
    """Constants from `vocab.ViterbiPieces`; per id unless noted."""

    viterbi: graph_viterbi.ViterbiTables
    margins: tf.Tensor   # float32: score minus best split
    first: tf.Tensor     # int32: first code point (-1: none, as for <unk>)
    last: tf.Tensor      # int32: last code point
    pairs: tf.Tensor     # int64 (k,) sorted: a * 2^21 + b for each "ab" inside some piece
    unk_id: int
    unk_score: float

    @classmethod
    def build(cls, pieces):
        """From `SpmVocab.viterbi_pieces()`."""
        first = [ord(t[0]) if t else -1 for t in pieces.texts]
        last = [ord(t[-1]) if t else -1 for t in pieces.texts]
        pairs = sorted({ord(a) * _CODE_POINTS + ord(b) for t in pieces.texts
                        for a, b in zip(t, t[1:])})
        return cls(viterbi=graph_viterbi.ViterbiTables.build(pieces),
                   margins=tf.constant(pieces.margins, tf.float32),
                   first=tf.constant(first, tf.int32), last=tf.constant(last, tf.int32),
                   pairs=tf.constant(np.array(pairs, np.int64)), unk_id=pieces.unk_id,
                   unk_score=float(pieces.unk_score))


@dataclasses.dataclass
class _Path:
    """Flat pieces of a batch in order (`n` of them)."""

    ids: tf.Tensor     # int32 (n,)
    rows: tf.Tensor    # int32 (n,)
    begins: tf.Tensor  # int32 (n,) byte offsets into the row's text
    ends: tf.Tensor
    units: tf.Tensor   # int32 (n,) characters the reference scored (<unk> runs: > 1)


@functools.partial(tf.function, autograph=False, reduce_retracing=True)
def repair(text, pieces, tables):
    """SentencePiece's output, re-decided where the reference may decide otherwise.

    Args:
        text: string (batch,), what SentencePiece tokenized.
        pieces: `(ids, begins, ends)` of `tokenize_with_offsets(text)`, ragged
            (batch, None), byte offsets into `text`.

    Returns:
        `(ids, begins, ends)` as the reference gives them: int32, ragged
        (batch, None) with int64 row splits, byte offsets into `text`.
    """
    batch = tf.shape(text)[0]
    path = _flat_path(text, *pieces, tables)
    seg = _segments(path, tables)                                       # (n,)
    num_segments = tf.reduce_max(tf.concat([seg, [-1]], 0)) + 1
    first = tf.math.unsorted_segment_min(tf.range(tf.size(seg)), seg, num_segments)
    count = tf.math.unsorted_segment_sum(tf.ones_like(seg), seg, num_segments)
    start = tf.gather(_running_scores(path, tables, batch), first)      # (segments,)
    margin = tf.gather(tables.margins, tf.gather(path.ids, first))
    redo = (count > 1) | (margin <= (tf.abs(start) + _SLACK) * _ULPS)
    segments = _Segments.build(path, seg, tf.cast(tf.where(redo)[:, 0], tf.int32), tables)

    # Start scores include earlier re-decided segments: iterate to a fixed point
    # (a row's first re-decided segment is right at once, the next one after one
    # more round, ...). State: start scores, the ones the path was decided from, path.
    def decide(start, _, *path_fields):
        chosen = graph_viterbi.viterbi(segments.lattice, start, tables.viterbi.max_chars)
        merged, first = segments.merge(graph_viterbi.backtrack(chosen, segments.lattice,
                                                               tables.viterbi))
        after = tf.gather(_running_scores(merged, tables, batch), first)
        return (after, start, merged.ids, merged.rows, merged.begins, merged.ends)

    now = tf.gather(start, segments.ids)
    state = (now, tf.fill(tf.shape(now), np.nan), path.ids, path.rows, path.begins, path.ends)
    *_, ids, rows, begins, ends = tf.while_loop(
        lambda start, used, *_: tf.reduce_any(start != used), decide, state,
        shape_invariants=(tf.TensorShape([None]),) * len(state),
        maximum_iterations=tf.size(now) + 1)
    rows, nrows = tf.cast(rows, tf.int64), tf.cast(batch, tf.int64)
    return tuple(tf.RaggedTensor.from_value_rowids(v, rows, nrows=nrows, validate=False)
                 for v in (ids, begins, ends))


def _flat_path(text, ids, begins, ends, tables):
    rows = tf.cast(ids.value_rowids(), tf.int32)
    begin, end = (tf.cast(x.flat_values, tf.int32) for x in (begins, ends))
    flat_ids = ids.flat_values
    # The reference scores an <unk> run per character of its normalized text.
    unk = tf.cast(tf.where(flat_ids == tables.unk_id)[:, 0], tf.int32)
    offset, size = (tf.RaggedTensor.from_value_rowids(tf.gather(x, unk), tf.gather(rows, unk),
                                                      nrows=tf.shape(text)[0], validate=False)
                    for x in (begin, end - begin))
    span = tf.strings.substr(text[:, None], offset.to_tensor(), size.to_tensor())  # broadcast
    chars = tf.strings.length(tf_text.normalize_utf8(span, "NFKC"), unit="UTF8_CHAR")
    chars = tf.RaggedTensor.from_tensor(chars, lengths=offset.row_lengths()).flat_values
    units = tf.tensor_scatter_nd_update(tf.ones_like(flat_ids), unk[:, None],
                                        tf.maximum(chars, 1))
    return _Path(flat_ids, rows, begin, end, units)


def _segments(path, tables):
    """Segment index of each piece: consecutive from 0, int32 (n,).

    A piece starts a segment when no piece could cross the boundary before
    it: no piece contains the last character before it and its first.
    """
    pair = tf.cast(tf.roll(tf.gather(tables.last, path.ids), 1, 0), tf.int64) * _CODE_POINTS
    pair += tf.cast(tf.gather(tables.first, path.ids), tf.int64)
    k = tf.minimum(tf.searchsorted(tables.pairs, pair), tf.size(tables.pairs) - 1)
    crossable = tf.gather(tables.pairs, k) == pair
    opens = (path.rows != tf.roll(path.rows, 1, 0)) | ~crossable
    return tf.math.cumsum(tf.cast(opens | (tf.range(tf.size(opens)) == 0), tf.int32)) - 1


def _repeat(values, counts):
    """`tf.repeat(values, counts)` in memory linear in `sum(counts)`: `tf.repeat`
    masks a (len(values), max(counts)) array, and one <unk> run of many characters
    beside many pieces makes that their product."""
    ends = tf.math.cumsum(counts)
    owner = tf.searchsorted(ends, tf.range(tf.reduce_sum(counts)), side="right")
    return tf.gather(values, owner)


def _running_scores(path, tables, batch):
    """The reference's path score before each piece: float32 sums, left to right.

    Float32 addition is not associative, so this must add in order: a CPU
    cumsum does (Eigen scans each row sequentially; tested against a loop);
    a GPU scan would not, hence the device.
    """
    scores = tf.where(path.ids == tables.unk_id, tables.unk_score,
                      tf.gather(tables.viterbi.scores, path.ids))
    rows = _repeat(path.rows, path.units)                               # (units,)
    unit = tf.range(tf.size(rows))
    column = unit - tf.gather(tf.math.unsorted_segment_min(unit, rows, batch), rows)
    width = tf.reduce_max(tf.concat([column + 1, [0]], 0))
    padded = tf.scatter_nd(tf.stack([rows, column], 1), _repeat(scores, path.units),
                           tf.stack([batch, width]))
    with tf.device("/CPU:0"):
        before = tf.math.cumsum(padded, axis=1, exclusive=True)        # (batch, width)
    first = tf.math.cumsum(path.units, exclusive=True)                  # each piece's first
    return tf.gather_nd(before, tf.stack([path.rows, tf.gather(column, first)], 1))


@dataclasses.dataclass
class _Segments:
    """The segments to re-decide (`s` of them) and what replacing them needs."""

    path: _Path
    seg: tf.Tensor        # int32 (n,) segment of each piece of `path`
    ids: tf.Tensor        # int32 (s,) which segments
    lattice: graph_viterbi.Lattice
    byte_at: tf.Tensor    # int32 (slots,) bytes from the segment's start to the slot
    old_start: tf.Tensor  # int32 (m,) slot where each original piece starts (sorted)
    old_bytes: tf.Tensor  # int32 (m,) its normalized bytes
    old: tf.Tensor        # int32 (m,) its index in `path`

    @classmethod
    def build(cls, path, seg, ids, tables):
        rank = tf.math.unsorted_segment_max(tf.range(tf.size(ids)), ids,
                                            tf.reduce_max(tf.concat([seg, [-1]], 0)) + 1)
        old = tf.cast(tf.where(tf.gather(rank, seg) >= 0)[:, 0], tf.int32)  # others: int min
        pieces = tf.gather(tables.viterbi.chars, tf.gather(path.ids, old))  # (m, None)
        row = tf.gather(rank, tf.gather(seg, old))                          # (m,)
        chars = tf.RaggedTensor.from_value_rowids(
            pieces.flat_values, tf.gather(row, tf.cast(pieces.value_rowids(), tf.int32)),
            nrows=tf.size(ids), validate=False)
        lattice = graph_viterbi.Lattice.build(chars, tables.viterbi)
        cp = chars.flat_values
        width = 1 + tf.cast(cp >= 0x80, tf.int32) + tf.cast(cp >= 0x800, tf.int32) + tf.cast(
            cp >= 0x10000, tf.int32)
        total = tf.math.cumsum(width)
        char_row = tf.cast(chars.value_rowids(), tf.int32)
        char_at = tf.range(tf.size(cp)) - tf.gather(tf.cast(chars.row_starts(), tf.int32), char_row)
        slot = tf.gather(lattice.base, char_row) + char_at + 1
        before_row = tf.gather(tf.concat([[0], total], 0), tf.cast(chars.row_starts(), tf.int32))
        byte_at = tf.tensor_scatter_nd_update(
            tf.zeros([tf.reduce_sum(lattice.length + 1)], tf.int32), slot[:, None],
            total - tf.gather(before_row, char_row))
        sizes = tf.cast(pieces.row_lengths(), tf.int32)
        within = tf.math.cumsum(sizes, exclusive=True)
        within -= tf.gather(tf.math.unsorted_segment_min(within, row, tf.size(ids)), row)
        old_start = tf.gather(lattice.base, row) + within
        old_bytes = tf.gather(byte_at, old_start + sizes) - tf.gather(byte_at, old_start)
        return cls(path=path, seg=seg, ids=ids, lattice=lattice, byte_at=byte_at,
                   old_start=old_start, old_bytes=old_bytes, old=old)

    def merge(self, new):
        """`(path, first)`: the path with these segments replaced by `new` pieces, and
        the index in it of each one's first piece."""
        ids, begins, ends = new
        path, seg = self.path, self.seg
        num_segments = tf.reduce_max(tf.concat([seg, [-1]], 0)) + 1
        old_count = tf.math.unsorted_segment_sum(tf.ones_like(seg), seg, num_segments)
        count = tf.tensor_scatter_nd_update(old_count, self.ids[:, None],
                                            tf.cast(ids.row_lengths(), tf.int32))
        offset = tf.math.cumsum(count, exclusive=True)                  # (segments,)
        old_first = tf.math.cumsum(old_count, exclusive=True)
        redone = tf.scatter_nd(self.ids[:, None], tf.ones_like(self.ids), [num_segments]) > 0
        kept = tf.cast(tf.where(~tf.gather(redone, seg))[:, 0], tf.int32)
        kept_seg = tf.gather(seg, kept)
        new_row = tf.cast(ids.value_rowids(), tf.int32)
        new_seg = tf.gather(self.ids, new_row)
        within = tf.range(tf.size(ids.flat_values)) - tf.gather(
            tf.cast(ids.row_starts(), tf.int32), new_row)
        at = [tf.gather(offset, kept_seg) + kept - tf.gather(old_first, kept_seg),
              tf.gather(offset, new_seg) + within]

        def stitch(old_values, new_values):
            return tf.dynamic_stitch(at, [tf.gather(old_values, kept), new_values])

        merged = _Path(ids=stitch(path.ids, ids.flat_values),
                       rows=stitch(path.rows, tf.gather(path.rows, tf.gather(old_first, new_seg))),
                       begins=stitch(path.begins, self._input_offsets(begins)),
                       ends=stitch(path.ends, self._input_offsets(ends)),
                       units=stitch(path.units, tf.ones_like(ids.flat_values)))
        return merged, tf.gather(offset, self.ids)

    def _input_offsets(self, local):
        """Byte offsets into the input of positions (ragged (s, None)): a position
        falls in an original piece, whose normalized and input bytes are the same
        but for a leading "▁" (3 bytes, for 1 space or none)."""
        at = tf.gather(self.lattice.base, tf.cast(local.value_rowids(), tf.int32))
        at += local.flat_values
        k = tf.searchsorted(self.old_start, at, side="right") - 1
        old = tf.gather(self.old, k)
        begin, end = tf.gather(self.path.begins, old), tf.gather(self.path.ends, old)
        inside = tf.gather(self.byte_at, at) - tf.gather(self.byte_at, tf.gather(self.old_start, k))
        inside -= tf.gather(self.old_bytes, k) - (end - begin)
        return begin + tf.clip_by_value(inside, 0, end - begin)
