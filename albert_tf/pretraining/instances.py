"""Segment pairs and training instances from one document.

Follows google-research/albert `create_instances_from_document`: sentences
are gathered into a chunk until it reaches a target length (`max_seq_length
- 3`, or with probability `short_seq_prob` a random length in [2, that], to
narrow the gap to the short inputs of fine-tuning); the chunk is cut at a
random sentence boundary into A and B; the longer of the two loses tokens from
a random end until the pair fits.

Sentence-order prediction (SOP, the default): A and B are consecutive text of
one document, kept in order (`sop_label` 0) or swapped (1), each with
probability 0.5. With `random_next_sentence` (NSP, BERT's task, for
comparison): with probability 0.5, B is taken from another document (label 1)
and the chunk's unused sentences are read again; otherwise B follows A (0).

Divergences from the reference, each for a reason:

- The short target is drawn per chunk. The reference draws it once per
  document, so a whole document (a whole chapter here) became short inputs.
- A chunk of a single sentence (a sentence longer than the target, or a
  document's last sentence on its own) is cut inside the sentence at a random
  word boundary. The reference instead pairs it with a random other document
  and labels it 1 even in SOP mode, mixing NSP negatives into SOP.
- Random documents come from a bounded window of nearby documents (the caller
  supplies them), not from the whole corpus, so that the corpus can stream.
"""

import dataclasses

import numpy as np

from albert_tf.pretraining import masking

SOP_IN_ORDER, SOP_SWAPPED = 0, 1
NSP_NEXT, NSP_RANDOM = 0, 1


@dataclasses.dataclass(frozen=True)
class Instance:
    """One pretraining example, unpadded.

    Attributes:
        token_ids: int32 `(seq_length,)`, `[CLS] A [SEP] B [SEP]` after masking.
        segment_ids: int32 `(seq_length,)`, 0 up to the first `[SEP]`, then 1.
        mask_positions: int32 `(num_masked,)`, ascending.
        mask_ids: int32 `(num_masked,)`, the original ids at `mask_positions`.
        sop_label: 0 in order, 1 swapped (or, with NSP, B from another document).
        span_lengths: int32 `(num_spans,)`, words per masked n-gram.
    """

    token_ids: np.ndarray
    segment_ids: np.ndarray
    mask_positions: np.ndarray
    mask_ids: np.ndarray
    sop_label: int
    span_lengths: np.ndarray


@dataclasses.dataclass(frozen=True)
class InstanceOptions:
    """The settings `document_instances` reads (validated by the caller's options)."""

    max_seq_length: int = 512
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    max_ngram: int = 3
    short_seq_prob: float = 0.1
    random_next_sentence: bool = False


def truncate_pair(len_a, len_b, max_tokens, rng):
    """How many tokens to drop from each end of A and B so that they fit.

    One token at a time leaves the longer segment (B on a tie), from its front
    or back with probability 0.5, as in the reference's `truncate_seq_pair`.

    Returns:
        `(a_front, a_back, b_front, b_back)` counts.
    """
    excess = len_a + len_b - max_tokens
    cut = [0, 0, 0, 0]
    if excess <= 0:
        return tuple(cut)
    fronts = rng.random(excess) < 0.5
    for front in fronts:
        side = 0 if len_a > len_b else 2
        cut[side + (0 if front else 1)] += 1
        if side == 0:
            len_a -= 1
        else:
            len_b -= 1
    return tuple(cut)


def _chunk_end(document, first, target):
    """One past the last sentence of the chunk that starts at sentence `first`."""
    start = document.ends[first - 1] if first else 0
    last = int(np.searchsorted(document.ends, start + target, side="left"))
    return min(last + 1, len(document))


def _cut_sentence(tokens, start, end, tables, rng):
    """A random word boundary strictly inside `tokens[start:end]`; None if none."""
    inside = np.arange(start + 1, end)
    boundaries = inside[~tables.continues_word[tokens[start + 1:end]]]
    if not len(boundaries):
        boundaries = inside  # one long word: any piece boundary
    if not len(boundaries):
        return None
    return int(boundaries[rng.integers(len(boundaries))])


def _random_segment(other_documents, target, rng):
    """Consecutive sentences of a random other document, at least `target` tokens
    (or up to its end), starting at a random sentence."""
    other = other_documents[int(rng.integers(len(other_documents)))]
    first = int(rng.integers(len(other)))
    end = _chunk_end(other, first, max(target, 1))
    return other.tokens[(other.ends[first - 1] if first else 0):other.ends[end - 1]]


def segment_pairs(document, rng, tables, options, other_documents=()):
    """Yields `(a, b, label)`: int32 token arrays, together at most
    `max_seq_length - 3` tokens (each at least 1), and the SOP/NSP label.

    Args:
        document: `documents.TokenizedDocument`.
        rng: `numpy.random.Generator`.
        tables: `masking.VocabularyTables` (word boundaries for single sentences).
        options: `InstanceOptions`.
        other_documents: documents for NSP negatives (with
            `random_next_sentence`); without any, B always follows A.
    """
    max_tokens = options.max_seq_length - 3  # [CLS], [SEP], [SEP]
    tokens, starts, ends = document.tokens, document.starts, document.ends
    first = 0
    while first < len(document):
        target = max_tokens
        if rng.random() < options.short_seq_prob:
            target = int(rng.integers(2, max_tokens + 1))
        end = _chunk_end(document, first, target)
        if end - first >= 2:
            cut = int(starts[int(rng.integers(first + 1, end))])
        else:
            cut = _cut_sentence(tokens, starts[first], ends[first], tables, rng)
            if cut is None:  # a one-token sentence alone: no pair
                first = end
                continue
        a, b = tokens[starts[first]:cut], tokens[cut:ends[end - 1]]
        if options.random_next_sentence and other_documents and rng.random() < 0.5:
            b = _random_segment(other_documents, target - len(a), rng)
            label = NSP_RANDOM
            # The chunk's sentences after A were not used: read them again.
            end = max(int(np.searchsorted(ends, cut, side="left")) + 1, first + 1)
        elif not options.random_next_sentence and rng.random() < 0.5:
            a, b, label = b, a, SOP_SWAPPED
        else:
            label = SOP_IN_ORDER  # == NSP_NEXT
        a_front, a_back, b_front, b_back = truncate_pair(len(a), len(b), max_tokens, rng)
        yield a[a_front:len(a) - a_back], b[b_front:len(b) - b_back], label
        first = end


def make_instance(a, b, label, rng, tables, options):
    """`[CLS] a [SEP] b [SEP]`, masked: an `Instance`."""
    cls_, sep = [tables.cls_id], [tables.sep_id]
    token_ids = np.concatenate([cls_, a, sep, b, sep]).astype(np.int32)
    segment_ids = np.zeros(len(token_ids), dtype=np.int32)
    segment_ids[len(a) + 2:] = 1
    masked = masking.mask_sequence(token_ids, tables, rng, options.masked_lm_prob,
                                   options.max_predictions_per_seq, options.max_ngram)
    return Instance(masked.token_ids, segment_ids, masked.positions, masked.label_ids,
                    int(label), masked.span_lengths)


def document_instances(document, rng, tables, options, other_documents=()):
    """Yields the `Instance`s of one document (see `segment_pairs`)."""
    for a, b, label in segment_pairs(document, rng, tables, options, other_documents):
        yield make_instance(a, b, label, rng, tables, options)
