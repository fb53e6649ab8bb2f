"""Whole-word n-gram masking for the masked-LM objective (ALBERT, Lan et al. 2019, sec. 4.1).

Given `[CLS] A [SEP] B [SEP]`, `mask_sequence` picks about `masked_lm_prob` of
the tokens (at most `max_predictions_per_seq`) as n-grams of whole WORDS and
corrupts them BERT's way: 80% `[MASK]`, 10% a random ordinary token, 10%
unchanged (decided per token, as in the reference).

Words. A word is a piece that starts one plus the pieces that continue it,
by the reference's rule on the pieces (google-research/albert's
`is_start_piece`): the tokenizer's vocabulary type's `continues_word`; and,
with whole-word masking of a segmented language (Chinese), by the marks the
data's segmenter set on the ids (`WORD_MARK`: the token continues a word of
the segmenter's, as brightmart/albert_zh's "##" marks say), removed before
anything is written.
SentencePiece: a piece continues the word before it when it has no leading
"▁", does not start with "<", is not a single punctuation character and
consists of ASCII letters and punctuation only ("liev" in "▁unbe" "liev"
"able", '"' "i" in '"I', "!!" after "▁what"); the reference's punctuation is
ASCII's without "'", "<", "=" and ">" (so "'" "s" is a word of two pieces).
WordPiece: a piece that starts with "##". Only `[CLS]`, `[SEP]`, `[MASK]` and
`<pad>` belong to no word and are never masked. `<unk>` is a piece like any
other: a word start (the reference sees the unknown text itself, and curly
quotes, dashes and letters outside the vocabulary all start words), masked
with the word, and the continuation pieces after it belong to its word
("“" "well" in “Well). The one case where the text behind `<unk>` would
continue a word instead, a run of ASCII punctuation outside the vocabulary
such as "~~", is not distinguished. As in the reference, a continuation piece
that opens segment B (after truncation) continues the last word of A: that
word spans the middle `[SEP]`, which it does not include.

N-gram placement (`ngram_placement`). The paper draws the length n of each
span with p(n) = (1/n) / sum_k (1/k), k = 1..max_ngram (6/11, 3/11, 2/11 for 3).

- `per_start` (the default, the reference's procedure): the words are visited
  in a random order; for each, n is drawn and the span of n words starting
  there (fewer at the end of the sequence) is shortened until it fits the
  remaining budget, then skipped if it overlaps a span already masked. Spans
  may cross the middle `[SEP]`. Skipping and shortening skew the realised
  lengths towards unigrams: masked runs of 1/2/3/4+ words are 54.1/26.7/15.9/
  3.3% on the shared Gutenberg corpus at 128 tokens (adjacent spans merge
  into runs of 4+), the same in Google's output and here, and 54.1/26.7/15.9/
  3.3% in Google's output on text in typographic punctuation (5% `<unk>`),
  where they stay the same only with `<unk>` in words.
- `fit_first`: n is drawn first and the span placed at a random start where n
  whole words of one segment fit (none masked yet, within the budget); only
  when no such start exists is n shortened. The realised lengths follow p(n)
  except for the last span of a sequence, which the budget may shorten: runs
  of 50.3/27.7/18.0/3.9% on the same corpus.

Randomness comes only from the `numpy.random.Generator` passed in. (The
reference drew n from numpy's GLOBAL generator, `np.random.choice`, which its
`--random_seed` never seeded, so its output was not reproducible.)
"""

import dataclasses

import numpy as np

MASK_PROB, RANDOM_PROB = 0.8, 0.1  # the rest (0.1) keeps the original token
PER_START, FIT_FIRST = "per_start", "fit_first"
NGRAM_PLACEMENTS = (PER_START, FIT_FIRST)
# Set on a token id whose token continues a word of the segmenter's (whole-word
# masking, `documents.tokenize_document`): a vocabulary has far fewer ids.
WORD_MARK = 1 << 30


def plain_ids(token_ids):
    """The ids without their whole-word marks."""
    return np.asarray(token_ids) & ~WORD_MARK


def continues(token_ids, tables):
    """bool, as `token_ids`: whether each token continues the word before it (by
    its piece, or by its whole-word mark)."""
    token_ids = np.asarray(token_ids)
    return tables.continues_word[token_ids & ~WORD_MARK] | (token_ids & WORD_MARK != 0)


@dataclasses.dataclass(frozen=True)
class VocabularyTables:
    """Per-id facts about a vocabulary that masking needs.

    Attributes:
        continues_word: bool `(vocabulary_size,)`, True for pieces that
            continue the word before them.
        special: bool `(vocabulary_size,)`, True for `<pad>`, `[CLS]`,
            `[SEP]`, `[MASK]`: in no word, never masked.
        random_ids: int32, the ids a token may be replaced by (neither
            special nor `<unk>`).
        cls_id, sep_id, mask_id: ids of `[CLS]`, `[SEP]`, `[MASK]`.
    """

    continues_word: np.ndarray
    special: np.ndarray
    random_ids: np.ndarray
    cls_id: int
    sep_id: int
    mask_id: int

    @classmethod
    def from_pieces(cls, pieces, special_ids, unk_id, cls_id, sep_id, mask_id, continues_word):
        """Tables from the pieces in id order, the ids that are special, `<unk>`'s id and
        the word rule (`piece -> bool`: whether it continues the word before it)."""
        continues = np.array([continues_word(p) for p in pieces], dtype=bool)
        special = np.zeros(len(pieces), dtype=bool)
        special[list(special_ids)] = True
        continues &= ~special
        continues[unk_id] = False
        replaceable = ~special
        replaceable[unk_id] = False
        return cls(continues, special, np.flatnonzero(replaceable).astype(np.int32),
                   int(cls_id), int(sep_id), int(mask_id))

    @classmethod
    def from_tokenizer(cls, tokenizer):
        """Tables of a host tokenizer (the protocol of `albert_tf.tokenizer.base`)."""
        from albert_tf.tokenizer.base import get_type

        rule = get_type(tokenizer.vocabulary_type).continues_word
        special = {tokenizer.pad_id, tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id}
        pieces = [tokenizer.id_to_piece(i) for i in range(tokenizer.vocabulary_size)]
        return cls.from_pieces(pieces, special, tokenizer.unk_id, tokenizer.cls_id,
                               tokenizer.sep_id, tokenizer.mask_id, rule)


@dataclasses.dataclass(frozen=True)
class MaskedSequence:
    """The result of `mask_sequence`.

    Attributes:
        token_ids: int32 `(seq_length,)`, the input after corruption.
        positions: int32 `(num_masked,)`, ascending positions predicted.
        label_ids: int32 `(num_masked,)`, the original ids there.
        span_lengths: int32 `(num_spans,)`, words per n-gram, in placement order.
        word_starts: bool `(seq_length,)`, the reference's `token_boundary`
            (`token_boundary`).
    """

    token_ids: np.ndarray
    positions: np.ndarray
    label_ids: np.ndarray
    span_lengths: np.ndarray
    word_starts: np.ndarray


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

    Word w's tokens are the positions in `starts[w]:ends[w]` that are not
    special (only a word continued across the middle `[SEP]` has one inside);
    `segment[w]` counts the special tokens before it.
    """
    special = tables.special[plain_ids(token_ids)]
    positions = np.flatnonzero(~special)
    is_start = ~continues(token_ids[positions], tables)
    is_start[:1] = True  # a continuation piece with no word before it starts one
    starts = positions[is_start]
    # A word ends after its last token before the next word starts.
    word = np.cumsum(is_start) - 1
    last = np.searchsorted(word, np.arange(len(starts)), side="right") - 1
    ends = positions[last] + 1
    segment = np.cumsum(special)[starts]
    return starts, ends, segment


def word_sizes(token_ids, tables, starts, ends):
    """Tokens of each word of `word_spans`, int64 `(num_words,)`."""
    before = np.concatenate([[0], np.cumsum(~tables.special[plain_ids(token_ids)])])
    return before[ends] - before[starts]


def token_boundary(token_ids, tables, starts):
    """The reference's `token_boundary`, bool `(seq_length,)`: the special tokens and
    the word starts that are start pieces (not a continuation piece opening A)."""
    boundary = tables.special[plain_ids(token_ids)].copy()
    boundary[starts] = ~continues(token_ids[starts], tables)
    return boundary


def _draw_lengths(probabilities, count, rng):
    """`count` n-gram lengths in 1..len(probabilities), int64."""
    cdf = np.cumsum(probabilities)
    return np.minimum(np.searchsorted(cdf, rng.random(count), side="right"),
                      len(probabilities) - 1) + 1


def spans_per_start(sizes, segment, budget, probabilities, rng):
    """The reference's placement (see the module docstring) over words of `sizes`
    tokens; `segment` is unused: spans may cross `[SEP]`.

    Returns:
        `list[(first_word, n)]` in placement order.
    """
    del segment
    num_words = len(sizes)
    # Tokens of words w..w+n-1: before[w + n] - before[w].
    before = np.concatenate([[0], np.cumsum(sizes)])
    order = rng.permutation(num_words)
    drawn = _draw_lengths(probabilities, num_words, rng)  # one n per start, as the reference
    covered = np.zeros(num_words, dtype=bool)
    spans, used = [], 0
    for first, n in zip(order.tolist(), drawn.tolist()):
        if used >= budget:
            break
        n = min(n, num_words - first)
        while n > 1 and before[first + n] - before[first] > budget - used:
            n -= 1
        size = int(before[first + n] - before[first])
        if size > budget - used or covered[first:first + n].any():
            continue
        covered[first:first + n] = True
        used += size
        spans.append((first, n))
    return spans


def _best_start(n, before, segment, covered, rank, room):
    """The first word, in the random order `rank`, where an n-word span fits; -1 if none."""
    count = len(segment) - n + 1
    if count <= 0:
        return -1
    ok = segment[:count] == segment[n - 1:]
    for k in range(n):
        ok &= ~covered[k:k + count]
    ok &= before[n:] - before[:count] <= room
    candidates = np.flatnonzero(ok)
    if not len(candidates):
        return -1
    return int(candidates[np.argmin(rank[candidates])])


def spans_fit_first(sizes, segment, budget, probabilities, rng):
    """Places whole-word n-grams over words of `sizes` tokens, n drawn first, until
    `budget` tokens are covered or nothing fits (see the module docstring).

    Returns:
        `list[(first_word, n)]` in placement order.
    """
    num_words = len(sizes)
    before = np.concatenate([[0], np.cumsum(sizes)])
    rank = rng.permutation(num_words)
    drawn = _draw_lengths(probabilities, budget, rng)  # every span takes at least one token
    covered = np.zeros(num_words, dtype=bool)
    spans, used = [], 0
    for n in drawn.tolist():
        if used >= budget:
            break
        first = _best_start(n, before, segment, covered, rank, budget - used)
        while first < 0 and n > 1:  # shorten only when n words fit nowhere
            n -= 1
            first = _best_start(n, before, segment, covered, rank, budget - used)
        if first < 0:
            break
        covered[first:first + n] = True
        used += int(before[first + n] - before[first])
        spans.append((first, n))
    return spans


PLACEMENTS = {PER_START: spans_per_start, FIT_FIRST: spans_fit_first}


def mask_sequence(token_ids, tables, rng, masked_lm_prob, max_predictions_per_seq, max_ngram,
                  ngram_placement=PER_START):
    """Masks whole-word n-grams of one `[CLS] A [SEP] B [SEP]` sequence.

    Args:
        token_ids: int `(seq_length,)`, unpadded (whole-word marks allowed: the
            result has none).
        tables: `VocabularyTables` of the vocabulary.
        rng: `numpy.random.Generator`, the only source of randomness.
        masked_lm_prob: share of the tokens to predict (0.15).
        max_predictions_per_seq: the cap on predicted tokens.
        max_ngram: the longest span in words.
        ngram_placement: "per_start" (the reference's) or "fit_first".

    Returns:
        `MaskedSequence`. Special tokens are never chosen.
    """
    marked = np.asarray(token_ids, dtype=np.int32)
    starts, ends, segment = word_spans(marked, tables)
    token_ids = plain_ids(marked).astype(np.int32)
    budget = prediction_budget(len(token_ids), masked_lm_prob, max_predictions_per_seq)
    spans = PLACEMENTS[ngram_placement](word_sizes(token_ids, tables, starts, ends), segment,
                                        budget, ngram_probabilities(max_ngram), rng)
    chosen = np.zeros(len(token_ids), dtype=bool)
    for first, n in spans:
        chosen[starts[first]:ends[first + n - 1]] = True
    positions = np.flatnonzero(chosen & ~tables.special[token_ids]).astype(np.int32)
    labels = token_ids[positions]
    corrupted = token_ids.copy()
    draw = rng.random(len(positions))
    replacements = tables.random_ids[rng.integers(len(tables.random_ids), size=len(positions))]
    corrupted[positions] = np.where(draw < MASK_PROB, tables.mask_id,
                                    np.where(draw < MASK_PROB + RANDOM_PROB, replacements,
                                             labels))
    return MaskedSequence(corrupted, positions, labels,
                          np.array([n for _, n in spans], dtype=np.int32),
                          token_boundary(marked, tables, starts))
