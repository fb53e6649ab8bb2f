"""Segment pairs and training instances from one document.

Follows google-research/albert `create_instances_from_document`: a target
length is drawn once per document (`max_seq_length - 3`, or with probability
`short_seq_prob` a random length in [2, that], to narrow the gap to the short
inputs of fine-tuning); sentences are gathered into a chunk until it reaches
the target (or the document ends); a chunk of several sentences is cut at a
random sentence boundary into A and B; the longer of the two loses tokens from
a random end until the pair fits.

Sentence-order prediction (SOP, the default): A and B are consecutive text of
one document, kept in order (label 0) or swapped (1), each with probability
0.5. With `random_next_sentence` (NSP, BERT's task): with probability 0.5, B
is taken from another document (label 1) and the chunk's unused sentences
are read again; otherwise B follows A (0).

A chunk of a single sentence (a sentence longer than the target, or a
document's last sentence on its own) has no sentence boundary to cut at. The
reference, and the default here, pairs it with B from a random other
document and labels it 1, in SOP mode too: at 128 tokens about 7% of SOP
pairs are such NSP-style negatives, and label 1 is 53.7% of Google's pairs
on the text of `tests/fixtures/pretraining/google/` (54% on the shared
Gutenberg corpus), not 50%.

Each divergence albert_tf used before is kept as an option (`DataOptions`):

- `target_length="per_chunk"`: the short target is drawn anew for every chunk,
  so short inputs are spread over all documents instead of filling whole
  documents (whole chapters) with them.
- `single_sentence="split"`: a single-sentence chunk is cut inside the
  sentence at a random word boundary and labelled like any other pair, so SOP
  data holds no random-document pairs (label 1 is then exactly "swapped").
- `ngram_placement="fit_first"`: see `masking`.

Random documents come from a bounded window of nearby documents (the caller
supplies them), not from the whole corpus, so that the corpus can stream;
with no other document at all, from the document itself (as the reference
does in a one-document corpus).
"""

import dataclasses

import numpy as np

from albert_tf.pretraining import masking

SOP_IN_ORDER, SOP_SWAPPED = 0, 1
NSP_NEXT, NSP_RANDOM = 0, 1
PER_DOCUMENT, PER_CHUNK = "per_document", "per_chunk"
TARGET_LENGTHS = (PER_DOCUMENT, PER_CHUNK)
RANDOM_B, SPLIT = "random_b", "split"
SINGLE_SENTENCES = (RANDOM_B, SPLIT)


@dataclasses.dataclass(frozen=True)
class Instance:
    """One pretraining example, unpadded.

    Attributes:
        token_ids: int32 `(seq_length,)`, `[CLS] A [SEP] B [SEP]` after masking.
        segment_ids: int32 `(seq_length,)`, 0 up to the first `[SEP]`, then 1.
        mask_positions: int32 `(num_masked,)`, ascending.
        mask_ids: int32 `(num_masked,)`, the original ids at `mask_positions`.
        sop_label: 0 in order; 1 swapped or B from another document.
        span_lengths: int32 `(num_spans,)`, words per masked n-gram.
        word_starts: bool `(seq_length,)`, where words start, `[CLS]`/`[SEP]`
            included (the reference's `token_boundary`).
    """

    token_ids: np.ndarray
    segment_ids: np.ndarray
    mask_positions: np.ndarray
    mask_ids: np.ndarray
    sop_label: int
    span_lengths: np.ndarray
    word_starts: np.ndarray


@dataclasses.dataclass(frozen=True)
class InstanceOptions:
    """The settings `document_instances` reads (validated by the caller's options)."""

    max_seq_length: int = 512
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    max_ngram: int = 3
    short_seq_prob: float = 0.1
    random_next_sentence: bool = False
    target_length: str = PER_DOCUMENT
    single_sentence: str = RANDOM_B
    ngram_placement: str = masking.PER_START


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


def _target_length(rng, options):
    """The reference's `target_seq_length`: usually all the room, sometimes less."""
    max_tokens = options.max_seq_length - 3  # [CLS], [SEP], [SEP]
    if rng.random() < options.short_seq_prob:
        return int(rng.integers(2, max_tokens + 1))
    return max_tokens


def _chunk_end(document, first, target):
    """One past the last sentence of the chunk that starts at sentence `first`."""
    start = document.ends[first - 1] if first else 0
    last = int(np.searchsorted(document.ends, start + target, side="left"))
    return min(last + 1, len(document))


def _cut_sentence(tokens, start, end, tables, rng):
    """A random word boundary strictly inside `tokens[start:end]`; None if none."""
    inside = np.arange(start + 1, end)
    boundaries = inside[~masking.continues(tokens[start + 1:end], tables)]
    if not len(boundaries):
        boundaries = inside  # one long word: any piece boundary
    if not len(boundaries):
        return None
    return int(boundaries[rng.integers(len(boundaries))])


def _random_segment(document, other_documents, target, rng):
    """Consecutive sentences of a random other document (of `document` itself if
    there is none), at least `target` tokens (or up to its end), starting at a
    random sentence."""
    pool = other_documents or (document,)
    other = pool[int(rng.integers(len(pool)))]
    first = int(rng.integers(len(other)))
    end = _chunk_end(other, first, max(target, 1))
    return other.tokens[(other.ends[first - 1] if first else 0):other.ends[end - 1]]


def _chunk_pair(document, first, end, target, rng, tables, options, other_documents):
    """`(a, b, label, next_first)` of the chunk of sentences `first:end`, untruncated;
    `a` is None when the chunk makes no pair (a one-token sentence, split)."""
    tokens, starts, ends = document.tokens, document.starts, document.ends
    if end - first == 1 and options.single_sentence == RANDOM_B:
        a = tokens[starts[first]:ends[first]]
        return a, _random_segment(document, other_documents, target - len(a), rng), 1, end
    if end - first == 1:
        cut = _cut_sentence(tokens, starts[first], ends[first], tables, rng)
        if cut is None:
            return None, None, None, end
    else:
        cut = int(starts[int(rng.integers(first + 1, end))])
    a, b = tokens[starts[first]:cut], tokens[cut:ends[end - 1]]
    if options.random_next_sentence and rng.random() < 0.5:
        b = _random_segment(document, other_documents, target - len(a), rng)
        # The chunk's sentences after A were not used: read them again.
        end = max(int(np.searchsorted(ends, cut, side="left")) + 1, first + 1)
        return a, b, NSP_RANDOM, end
    if not options.random_next_sentence and rng.random() < 0.5:
        return b, a, SOP_SWAPPED, end
    return a, b, SOP_IN_ORDER, end  # SOP_IN_ORDER == NSP_NEXT


def segment_pairs(document, rng, tables, options, other_documents=()):
    """Yields `(a, b, label)`: int32 token arrays, together at most
    `max_seq_length - 3` tokens (each at least 1), and the SOP/NSP label.

    Args:
        document: `documents.TokenizedDocument`.
        rng: `numpy.random.Generator`.
        tables: `masking.VocabularyTables` (word boundaries for `split`).
        options: `InstanceOptions`.
        other_documents: `TokenizedDocument`s to draw random segments B from
            (NSP negatives, single-sentence chunks).
    """
    max_tokens = options.max_seq_length - 3
    target = _target_length(rng, options)
    first = 0
    while first < len(document):
        end = _chunk_end(document, first, target)
        a, b, label, next_first = _chunk_pair(document, first, end, target, rng, tables,
                                              options, other_documents)
        if a is not None:
            a_front, a_back, b_front, b_back = truncate_pair(len(a), len(b), max_tokens, rng)
            yield a[a_front:len(a) - a_back], b[b_front:len(b) - b_back], label
        first = next_first
        if options.target_length == PER_CHUNK:
            target = _target_length(rng, options)


def make_instance(a, b, label, rng, tables, options):
    """`[CLS] a [SEP] b [SEP]`, masked: an `Instance`."""
    cls_, sep = [tables.cls_id], [tables.sep_id]
    token_ids = np.concatenate([cls_, a, sep, b, sep]).astype(np.int32)
    segment_ids = np.zeros(len(token_ids), dtype=np.int32)
    segment_ids[len(a) + 2:] = 1
    masked = masking.mask_sequence(token_ids, tables, rng, options.masked_lm_prob,
                                   options.max_predictions_per_seq, options.max_ngram,
                                   options.ngram_placement)
    return Instance(masked.token_ids, segment_ids, masked.positions, masked.label_ids,
                    int(label), masked.span_lengths, masked.word_starts)


def document_instances(document, rng, tables, options, other_documents=()):
    """Yields the `Instance`s of one document (see `segment_pairs`)."""
    for a, b, label in segment_pairs(document, rng, tables, options, other_documents):
        yield make_instance(a, b, label, rng, tables, options)
