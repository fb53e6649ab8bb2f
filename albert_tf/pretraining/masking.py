"""Whole-word n-gram masking for the masked-LM objective (ALBERT, Lan et al. 2019, sec. 4.1).

Given `[CLS] A [SEP] B [SEP]`, `mask_sequence` picks about `masked_lm_prob` of
the tokens (at most `max_predictions_per_seq`) as n-grams of whole WORDS and
corrupts them BERT's way: 80% `[MASK]`, 10% a random ordinary token, 10%
unchanged (decided per token, as in the reference).

Words. A word is a piece that starts one plus the pieces that continue it. A
piece continues the word before it when it has no leading "▁" and consists
of ASCII letters only ("▁unbe" "liev" "able"); punctuation, digits and other
pieces start a word of their own. This is google-research/albert's
`_is_start_piece_sp` rule (which also makes "," or "2" words of their own),
without its quirk for pieces mixing letters and punctuation. Unlike the
reference, a word never continues across `[SEP]` (the reference glues a
continuation piece that opens segment B, e.g. after truncation, to the last
word of A), and no n-gram spans both segments: spans are contiguous text.

N-gram lengths. The paper draws the length n of each span with
p(n) = (1/n) / sum_k (1/k), k = 1..max_ngram (6/11, 3/11, 2/11 for 3). The
reference draws n per shuffled start position and then shortens or drops the
span when it runs past the text, overlaps an earlier span or the budget,
which skews the masked spans towards unigrams. Here n is drawn first and the
span is placed at a random start where n whole words fit (same segment, none
masked yet, within the remaining budget); only when no such start exists is n
shortened. So the realised lengths follow p(n) except for the last span of a
sequence, which the budget may shorten. Measured on Pride and Prejudice
(max_seq_length 128, 20 predictions, ~8 spans a sequence): 57.2/26.5/16.3%
here, 59.7/25.8/14.6% with the reference's procedure, for 54.5/27.3/18.2%.

Randomness comes only from the `numpy.random.Generator` passed in. (The
reference drew n from numpy's GLOBAL generator, `np.random.choice`, which its
`--random_seed` never seeded, so its output was not reproducible.)
"""

import dataclasses
import re

import numpy as np

UNDERLINE = "\u2581"
_CONTINUATION = re.compile(r"[A-Za-z]+")
MASK_PROB, RANDOM_PROB = 0.8, 0.1  # the rest (0.1) keeps the original token


@dataclasses.dataclass(frozen=True)
class VocabularyTables:
    """Per-id facts about a vocabulary that masking needs.

    Attributes:
        continues_word: bool `(vocabulary_size,)`, True for pieces that
            continue the word before them.
        special: bool `(vocabulary_size,)`, True for control and unknown
            pieces (`<pad>`, `<unk>`, `[CLS]`, `[SEP]`, `[MASK]`).
        random_ids: int32, the ids a token may be replaced by (not special).
        cls_id, sep_id, mask_id: ids of `[CLS]`, `[SEP]`, `[MASK]`.
    """

    continues_word: np.ndarray
    special: np.ndarray
    random_ids: np.ndarray
    cls_id: int
    sep_id: int
    mask_id: int

    @classmethod
    def from_pieces(cls, pieces, special_ids, cls_id, sep_id, mask_id):
        """Tables from the pieces in id order and the ids that are special."""
        continues = np.array([not p.startswith(UNDERLINE) and bool(_CONTINUATION.fullmatch(p))
                              for p in pieces], dtype=bool)
        special = np.zeros(len(pieces), dtype=bool)
        special[list(special_ids)] = True
        continues &= ~special
        return cls(continues, special, np.flatnonzero(~special).astype(np.int32),
                   int(cls_id), int(sep_id), int(mask_id))

    @classmethod
    def from_tokenizer(cls, tokenizer):
        """Tables of an `albert_tf.tokenizer.HostTokenizer`."""
        sp = tokenizer.vocab.sp
        size = tokenizer.vocabulary_size
        special = [i for i in range(size) if sp.is_control(i) or sp.is_unknown(i)]
        special += [tokenizer.pad_id, tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id]
        return cls.from_pieces([sp.id_to_piece(i) for i in range(size)], set(special),
                               tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id)


@dataclasses.dataclass(frozen=True)
class MaskedSequence:
    """The result of `mask_sequence`.

    Attributes:
        token_ids: int32 `(seq_length,)`, the input after corruption.
        positions: int32 `(num_masked,)`, ascending positions predicted.
        label_ids: int32 `(num_masked,)`, the original ids there.
        span_lengths: int32 `(num_spans,)`, words per n-gram, in placement order.
    """

    token_ids: np.ndarray
    positions: np.ndarray
    label_ids: np.ndarray
    span_lengths: np.ndarray


def ngram_probabilities(max_ngram):
    """p(n) proportional to 1/n for n = 1..max_ngram (ALBERT sec. 4.1)."""
    if max_ngram < 1:
        raise ValueError(f"max_ngram must be >= 1, got {max_ngram}")
    weights = 1.0 / np.arange(1, max_ngram + 1)
    return weights / weights.sum()


def prediction_budget(seq_length, masked_lm_prob, max_predictions_per_seq):
    """Tokens to predict: `masked_lm_prob` of the sequence (specials counted, as in
    the reference), at least 1, at most `max_predictions_per_seq`."""
    return min(max_predictions_per_seq, max(1, int(round(seq_length * masked_lm_prob))))


def word_spans(token_ids, tables):
    """`(starts, ends, segment)` of the words, each int64 `(num_words,)`.

    Word w covers positions `starts[w]:ends[w]`; `segment[w]` counts the
    special tokens before it, so words of different segments differ.
    """
    special = tables.special[token_ids]
    previous_special = np.concatenate([[True], special[:-1]])
    is_start = ~special & (~tables.continues_word[token_ids] | previous_special)
    starts = np.flatnonzero(is_start)
    # A word ends where the next word or the next special token begins.
    boundaries = np.append(np.flatnonzero(is_start | special), len(token_ids))
    ends = boundaries[np.searchsorted(boundaries, starts, side="right")]
    segment = np.cumsum(special)[starts]
    return starts, ends, segment


def _best_start(n, starts, ends, segment, covered, rank, room):
    """The first word, in the random order `rank`, where an n-word span fits; -1 if none."""
    count = len(starts) - n + 1
    if count <= 0:
        return -1
    ok = segment[:count] == segment[n - 1:]
    for k in range(n):
        ok &= ~covered[k:k + count]
    ok &= ends[n - 1:] - starts[:count] <= room
    candidates = np.flatnonzero(ok)
    if not len(candidates):
        return -1
    return int(candidates[np.argmin(rank[candidates])])


def choose_spans(starts, ends, segment, budget, probabilities, rng):
    """Places whole-word n-grams until `budget` tokens are covered or nothing fits.

    Returns:
        `list[(first_word, n)]` in placement order.
    """
    num_words = len(starts)
    rank = rng.permutation(num_words)
    # One draw per possible span: every span takes at least one token.
    cdf = np.cumsum(probabilities)
    drawn = np.minimum(np.searchsorted(cdf, rng.random(budget), side="right"),
                       len(probabilities) - 1) + 1
    covered = np.zeros(num_words, dtype=bool)
    spans, used = [], 0
    for n in drawn:
        if used >= budget:
            break
        n = int(n)
        first = _best_start(n, starts, ends, segment, covered, rank, budget - used)
        while first < 0 and n > 1:  # shorten only when n words fit nowhere
            n -= 1
            first = _best_start(n, starts, ends, segment, covered, rank, budget - used)
        if first < 0:
            break
        covered[first:first + n] = True
        used += int(ends[first + n - 1] - starts[first])
        spans.append((first, n))
    return spans


def mask_sequence(token_ids, tables, rng, masked_lm_prob, max_predictions_per_seq, max_ngram):
    """Masks whole-word n-grams of one `[CLS] A [SEP] B [SEP]` sequence.

    Args:
        token_ids: int `(seq_length,)`, unpadded.
        tables: `VocabularyTables` of the vocabulary.
        rng: `numpy.random.Generator`, the only source of randomness.
        masked_lm_prob: share of the tokens to predict (0.15).
        max_predictions_per_seq: the cap on predicted tokens.
        max_ngram: the longest span in words.

    Returns:
        `MaskedSequence`. Special tokens are never chosen.
    """
    token_ids = np.asarray(token_ids, dtype=np.int32)
    starts, ends, segment = word_spans(token_ids, tables)
    budget = prediction_budget(len(token_ids), masked_lm_prob, max_predictions_per_seq)
    spans = choose_spans(starts, ends, segment, budget, ngram_probabilities(max_ngram), rng)
    if spans:
        positions = np.sort(np.concatenate(
            [np.arange(starts[w], ends[w + n - 1]) for w, n in spans])).astype(np.int32)
    else:
        positions = np.zeros(0, dtype=np.int32)
    labels = token_ids[positions]
    corrupted = token_ids.copy()
    draw = rng.random(len(positions))
    replacements = tables.random_ids[rng.integers(len(tables.random_ids), size=len(positions))]
    corrupted[positions] = np.where(draw < MASK_PROB, tables.mask_id,
                                    np.where(draw < MASK_PROB + RANDOM_PROB, replacements,
                                             labels))
    return MaskedSequence(corrupted, positions, labels,
                          np.array([n for _, n in spans], dtype=np.int32))
