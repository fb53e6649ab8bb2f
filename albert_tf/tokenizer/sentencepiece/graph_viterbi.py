"""The reference `sentencepiece` unigram Viterbi on short segments (TensorFlow ops only).

Used by `graph_ties`. A batch of `s` segments (texts with no forced piece
boundary inside) is given as code points; every piece that matches in them
is found by walking a trie of the vocabulary, one character per step, for all
start positions at once (`Lattice.build`); then one loop over character
positions runs the reference's float32 dynamic program for all segments
together (`viterbi`) and another follows the best path back (`backtrack`).

Positions are characters: slot `base[j] + e` stands for position e (0 to
`length[j]`) of segment j.
"""

import dataclasses
import functools

import numpy as np
import tensorflow as tf

_CODE_POINTS = 1 << 21  # trie edge key: node * _CODE_POINTS + code point


@dataclasses.dataclass
class ViterbiTables:
    """Constants from `vocab.ViterbiPieces`; per id unless noted."""

    scores: tf.Tensor       # float32: what the reference adds to a path score
    chars: tf.RaggedTensor  # int32 (vocab, None): code points
    edge_keys: tf.Tensor    # int64 (edges,) sorted: parent node * 2^21 + code point
    edge_child: tf.Tensor   # int32 (edges,)
    node_piece: tf.Tensor   # int32 (nodes,): the id a node spells, -1 if none; root is 0
    max_chars: int          # longest piece

    @classmethod
    def build(cls, pieces):
        keys, children, node_piece = _trie(pieces.texts)
        lengths = np.array([len(t) for t in pieces.texts], np.int64)
        code_points = np.array([ord(c) for t in pieces.texts for c in t], np.int32)
        return cls(scores=tf.constant(pieces.scores, tf.float32),
                   chars=tf.RaggedTensor.from_row_lengths(tf.constant(code_points),
                                                          tf.constant(lengths)),
                   edge_keys=tf.constant(keys), edge_child=tf.constant(children),
                   node_piece=tf.constant(node_piece), max_chars=int(lengths.max()))


@functools.lru_cache(maxsize=4)
def _trie(texts):
    """`(keys, children, node_piece)` of `ViterbiTables` for the non-empty `texts`."""
    edges, node_piece = {}, [-1]
    for index, text in enumerate(texts):
        node = 0
        for c in text:
            key = node * _CODE_POINTS + ord(c)
            if key not in edges:
                edges[key] = len(node_piece)
                node_piece.append(-1)
            node = edges[key]
        if text:
            node_piece[node] = index
    keys = np.array(sorted(edges), np.int64)
    return keys, np.array([edges[k] for k in keys], np.int32), np.array(node_piece, np.int32)


@dataclasses.dataclass
class Lattice:
    """Every piece that matches in `s` segments.

    Column c at a slot is the piece of `max_chars - c` characters that ends
    there: longest first, the order in which the reference tries them.
    """

    length: tf.Tensor  # int32 (s,) characters
    base: tf.Tensor    # int32 (s,) first slot
    scores: tf.Tensor  # float32 (slots, max_chars); -inf: no piece
    ids: tf.Tensor     # int32 (slots, max_chars)

    @classmethod
    def build(cls, chars, tables):
        """chars: int32 ragged (s, None) code points of each segment."""
        length = tf.cast(chars.row_lengths(), tf.int32)
        base = tf.math.cumsum(length + 1, exclusive=True)
        flat = chars.flat_values
        row = tf.cast(chars.value_rowids(), tf.int32)
        start = tf.range(tf.size(flat))
        room = tf.gather(tf.cast(chars.row_limits(), tf.int32), row) - start
        slot = tf.gather(base, row) + start - tf.gather(tf.cast(chars.row_starts(), tf.int32), row)

        def deeper(size, start, room, node, slot, where, piece):
            """One character deeper in the trie from every start still matching."""
            alive = tf.where(room >= size)[:, 0]
            start, node, slot = (tf.gather(x, alive) for x in (start, node, slot))
            key = tf.cast(node, tf.int64) * _CODE_POINTS + tf.cast(
                tf.gather(flat, start + size - 1), tf.int64)
            k = tf.minimum(tf.searchsorted(tables.edge_keys, key), tf.size(tables.edge_keys) - 1)
            hit = tf.where(tf.gather(tables.edge_keys, k) == key)[:, 0]
            start, slot = tf.gather(start, hit), tf.gather(slot, hit)
            node = tf.gather(tables.edge_child, tf.gather(k, hit))
            found = tf.gather(tables.node_piece, node)
            ends = tf.where(found >= 0)[:, 0]
            end_slot = tf.gather(slot, ends) + size
            where = where.write(size - 1, tf.stack(
                [end_slot, tf.fill(tf.shape(end_slot), tables.max_chars - size)], 1))
            return (size + 1, start, tf.gather(room, tf.gather(alive, hit)), node, slot, where,
                    piece.write(size - 1, tf.gather(found, ends)))

        arrays = (tf.TensorArray(tf.int32, size=tables.max_chars, infer_shape=False,
                                 element_shape=[None, 2]),
                  tf.TensorArray(tf.int32, size=tables.max_chars, infer_shape=False,
                                 element_shape=[None]))
        state = (tf.constant(1), start, room, tf.zeros_like(start), slot) + arrays
        *_, where, piece = tf.while_loop(
            lambda size, start, *_: (size <= tables.max_chars), deeper, state,
            shape_invariants=(tf.TensorShape([]),) + (tf.TensorShape([None]),) * 4 + (
                tf.TensorShape(None),) * 2)
        where, piece = where.concat(), piece.concat()
        shape = tf.stack([tf.reduce_sum(length + 1), tables.max_chars])
        scores = tf.tensor_scatter_nd_update(tf.fill(shape, -np.inf), where,
                                             tf.gather(tables.scores, piece))
        ids = tf.tensor_scatter_nd_update(tf.zeros(shape, tf.int32), where, piece)
        return cls(length=length, base=base, scores=scores, ids=ids)


def viterbi(lattice, start, max_chars):
    """The reference's float32 dynamic program over each segment.

    Args:
        start: float32 (s,), the path score where each segment starts.

    Returns:
        int32 (width, s): row e - 1 holds, for each segment, the column of the
        last piece of the best path ending at position e. A candidate replaces
        the best so far only if strictly greater, so ties go to the longest.
    """
    width = tf.maximum(tf.reduce_max(tf.concat([lattice.length, [0]], 0)), 1)
    last = tf.shape(lattice.scores)[0] - 1
    columns = tf.range(max_chars)
    # window[:, c]: the best score ending max_chars - c positions before the current one.
    window = tf.concat([tf.fill([tf.size(start), max_chars - 1], -np.inf), start[:, None]], 1)

    def step(e, window, chosen):
        candidates = window + tf.gather(lattice.scores, tf.minimum(lattice.base + e, last))
        best = tf.reduce_max(candidates, 1)
        column = tf.reduce_min(tf.where(candidates == best[:, None], columns, max_chars), 1)
        return e + 1, tf.concat([window[:, 1:], best[:, None]], 1), chosen.write(e - 1, column)

    _, _, chosen = tf.while_loop(
        lambda e, *_: e <= width, step,
        (tf.constant(1), window, tf.TensorArray(tf.int32, size=width, element_shape=[None])))
    return chosen.stack()


def backtrack(chosen, lattice, tables):
    """The best path of each segment: ragged (s, None) ids, begin and end positions."""
    max_chars = tables.max_chars
    segment = tf.range(tf.size(lattice.length))
    last = tf.shape(lattice.scores)[0] - 1

    def step(i, end, ids, ends):
        live = end > 0
        column = tf.gather_nd(chosen, tf.stack([tf.maximum(end - 1, 0), segment], 1))
        column = tf.where(live, column, max_chars)
        piece = tf.gather_nd(lattice.ids, tf.stack(
            [tf.minimum(lattice.base + end, last), tf.minimum(column, max_chars - 1)], 1))
        return (i + 1, end - (max_chars - column), ids.write(i, tf.where(live, piece, -1)),
                ends.write(i, end))

    arrays = [tf.TensorArray(tf.int32, size=0, dynamic_size=True, element_shape=[None])
              for _ in range(2)]
    _, _, ids, ends = tf.while_loop(
        lambda i, end, *_: (i == 0) | tf.reduce_any(end > 0), step,
        (tf.constant(0), lattice.length, *arrays))
    ids, ends = tf.transpose(ids.stack()), tf.transpose(ends.stack())  # (s, steps), last first
    lengths = tf.reduce_sum(tf.cast(ids >= 0, tf.int32), 1)
    ids, ends = (tf.RaggedTensor.from_tensor(
        tf.reverse_sequence(x, lengths, seq_axis=1, batch_axis=0), lengths=lengths)
        for x in (ids, ends))
    begins = ends - tf.gather(tf.cast(tables.chars.row_lengths(), tf.int32), ids)
    return ids, begins, ends
