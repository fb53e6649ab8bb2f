"""Pretraining data: segment pairs (SOP/NSP) and whole-word n-gram masking statistics.

Statistical tolerances are stated where they are used; each is a few standard
deviations of the sampling error plus, where there is one, the known bias.
"""

import os
import random

import numpy as np
import pytest

from albert_tf.pretraining import instances, masking
from albert_tf.pretraining.documents import TokenizedDocument, tokenize_document
from albert_tf.tokenizer.sentencepiece.host import HostTokenizer
from albert_tf.tokenizer.base import get_type
from conftest import FIXTURES

SPM = os.path.join(FIXTURES, "spm", "albert_30k_clean.model")
# Short and long words: "neighbourhood", "unbelievably", "lighthouse" split into pieces.
WORDS = ("the a of and to in was he she it ship light keeper sea ledger wind storm night "
         "harbour captain doctor village arithmetic neighbourhood unbelievably lighthouse "
         "fishermen exclamation extraordinarily gallery rattled 1990 Lisbon Oyelaran "
         "Abernethy Brannock's Marigold").split()


@pytest.fixture(scope="module")
def tokenizer():
    return HostTokenizer(SPM)


@pytest.fixture(scope="module")
def tables(tokenizer):
    return masking.VocabularyTables.from_tokenizer(tokenizer)


def synthetic_sentences(rng, count):
    out = []
    for _ in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randrange(3, 18))]
        out.append(" ".join(words).capitalize() + rng.choice([".", "!", "?", ", he said."]))
    return out


@pytest.fixture(scope="module")
def corpus(tokenizer):
    rng = random.Random(0)
    return [tokenize_document(tokenizer, synthetic_sentences(rng, 40)) for _ in range(30)]


def make_instances(corpus, tables, seed, dupes, **options):
    rng = np.random.default_rng(seed)
    opts = instances.InstanceOptions(**options)
    out = []
    for _ in range(dupes):
        for doc in corpus:
            out += instances.document_instances(doc, rng, tables, opts)
    return out


@pytest.fixture(scope="module")
def sample(corpus, tables):
    """~1,400 instances of up to 128 tokens (budget 19): ~11,000 spans, ~23,700 masked tokens."""
    return make_instances(corpus, tables, 1, 8, max_seq_length=128, max_predictions_per_seq=20)


@pytest.fixture(scope="module")
def fit_first_sample(corpus, tables):
    return make_instances(corpus, tables, 1, 8, max_seq_length=128, max_predictions_per_seq=20,
                          ngram_placement="fit_first")


def original_ids(instance):
    ids = instance.token_ids.copy()
    ids[instance.mask_positions] = instance.mask_ids
    return ids


def test_ngram_probabilities():
    np.testing.assert_allclose(masking.ngram_probabilities(3), [6 / 11, 3 / 11, 2 / 11])
    np.testing.assert_allclose(masking.ngram_probabilities(1), [1.0])


def test_word_spans(tokenizer, tables):
    """The reference's words: a piece that starts one plus the pieces of ASCII letters
    and punctuation after it; single punctuation, digits, "'" and `<unk>` start words;
    a continuation piece that opens B continues A's last word across [SEP]."""
    a = tokenizer.encode("the unbelievably extraordinary neighbourhood, “what!!” 1990")
    b = tokenizer.encode("Oyelaran keeper's")[1:]  # B opens with a continuation piece
    ids = np.array([tables.cls_id, *a, tables.sep_id, *b, tables.sep_id], np.int32)
    starts, ends, segment = masking.word_spans(ids, tables)
    words = [[tokenizer.id_to_piece(int(i)) for i in ids[s:e]] for s, e in zip(starts, ends)]
    assert words == [["▁the"], ["▁un", "be", "liev", "ably"], ["▁extraordinary"],
                     ["▁neighbourhood"], [","], ["▁"], ["<unk>", "what", "!!"], ["<unk>"],
                     ["▁1990", "[SEP]", "oye", "lar", "an"], ["▁keeper"], ["'", "s"]]
    assert segment.tolist() == [1] * 9 + [2] * 2
    sizes = masking.word_sizes(ids, tables, starts, ends)
    assert sizes.tolist() == [len(w) - ("[SEP]" in w) for w in words]
    boundary = masking.token_boundary(ids, tables, starts)
    assert np.flatnonzero(boundary).tolist() == [0, *starts[:9].tolist(), len(a) + 1,
                                                 *starts[9:].tolist(), len(ids) - 1]
    # A continuation piece right after [CLS] opens a word, without a boundary there.
    ids = np.array([tables.cls_id, *b, tables.sep_id, *a[:2], tables.sep_id], np.int32)
    starts, ends, _ = masking.word_spans(ids, tables)
    assert starts[0] == 1 and not masking.token_boundary(ids, tables, starts)[1]


def test_sentencepiece_word_rule():
    """The reference's `_is_start_piece_sp`, piece by piece."""
    continues = ["liev", "s", "!!", "**", "://", "];", "Ab", '."']
    starts = ["▁the", "▁", "'", "'s", ",", '"', "-", "<unk>", "<b>", "“", "é", "1990", "=>",
              "a1"]
    assert all(get_type("sentencepiece").continues_word(p) for p in continues)
    assert not any(get_type("sentencepiece").continues_word(p) for p in starts)


class ProtocolTokenizer:
    """Only what albert_tf.tokenizer.base's protocol promises, with WordPiece pieces."""

    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##believ", "##able", "the",
              ","]
    pad_id, unk_id, cls_id, sep_id, mask_id = range(5)
    vocabulary_size = len(pieces)

    def __init__(self, vocabulary_type):
        self.vocabulary_type = vocabulary_type

    def id_to_piece(self, index):
        return self.pieces[index]


def test_tables_need_only_the_tokenizer_protocol():
    """WordPiece: "##" continues a word (the reference's `_is_start_piece_bert`)."""
    tables = masking.VocabularyTables.from_tokenizer(ProtocolTokenizer("wordpiece"))
    assert np.flatnonzero(tables.continues_word).tolist() == [6, 7]
    assert np.flatnonzero(tables.special).tolist() == [0, 2, 3, 4]  # [UNK] is a word
    assert tables.random_ids.tolist() == [5, 6, 7, 8, 9]
    ids = np.array([2, 5, 6, 7, 8, 3, 6, 9, 1, 7, 3])
    # [CLS] un ##believ ##able the [SEP] ##believ , [UNK] ##able [SEP]
    starts, ends, segment = masking.word_spans(ids, tables)
    assert list(zip(starts.tolist(), ends.tolist())) == [(1, 4), (4, 7), (7, 8), (8, 10)]
    # The word rule is the vocabulary type's (`VocabularyType.continues_word`).
    with pytest.raises(ValueError, match="unknown vocabulary type 'bpe'; known vocabulary "
                                         "types: sentencepiece, wordpiece"):
        masking.VocabularyTables.from_tokenizer(ProtocolTokenizer("bpe"))


def test_fit_first_lengths_follow_one_over_n_in_long_sequences():
    """Far from the budget's end, fit_first span lengths follow p(n) = 6/11, 3/11, 2/11.

    40 sequences of 2,000 one-token words, budget 300: ~7,000 spans, so the
    sampling standard deviation is <= 0.006; only the last span of each
    sequence can be shortened by the budget (< 1% of spans). Tolerance 0.02.
    """
    rng = np.random.default_rng(0)
    counts = np.zeros(3)
    for _ in range(40):
        spans = masking.spans_fit_first(np.ones(2000, int), np.zeros(2000, int), 300,
                                        masking.ngram_probabilities(3), rng)
        counts += np.bincount([n for _, n in spans], minlength=4)[1:]
        assert sum(n for _, n in spans) == 300
    np.testing.assert_allclose(counts / counts.sum(), [6 / 11, 3 / 11, 2 / 11], atol=0.02)


def test_per_start_shortens_to_the_budget_and_skips_overlaps():
    """The reference's loop on words of 2, 1, 3, 1, 2 tokens, `[SEP]` after the third,
    n always 3, budget 5: whatever the order, spans are runs of whole words that
    never overlap and stay within the budget; a span has fewer than 3 words only
    at the end of the words or where one more word would pass the budget."""
    starts, ends = np.array([1, 3, 4, 8, 9]), np.array([3, 4, 7, 9, 11])
    segment = np.array([1, 1, 1, 2, 2])

    def tokens(first, n):
        return int((ends[first:first + n] - starts[first:first + n]).sum())

    crossed = 0
    for seed in range(300):
        spans = masking.spans_per_start(ends - starts, segment, 5, np.array([0.0, 0.0, 1.0]),
                                        np.random.default_rng(seed))
        words = [w for first, n in spans for w in range(first, first + n)]
        assert len(words) == len(set(words)) and sum(tokens(w, 1) for w in words) <= 5
        used = 0
        for first, n in spans:
            if n < min(3, len(starts) - first):
                assert tokens(first, n + 1) > 5 - used
            used += tokens(first, n)
        crossed += any(segment[first] != segment[first + n - 1] for first, n in spans)
    assert crossed > 0  # spans may cross [SEP], as in the reference


def test_placements_in_real_instances(sample, fit_first_sample):
    """Realised n-gram lengths; ~11,000 spans each, so the sampling sd is <= 0.005.

    fit_first: the budget (19 tokens, ~8 spans a sequence) shortens the last
    span of each sequence, moving about 0.027 from n >= 2 to n = 1 (measured
    on Pride and Prejudice at max_seq_length=128). Tolerance 0.04 (bias + 3
    sd), and the bias must point to unigrams. per_start (the reference's)
    also skips spans that overlap, and skews further to unigrams (0.63 of
    spans here, 0.57 with fit_first, 0.545 under p(n)).
    """
    def shares(instances):
        counts = sum(np.bincount(i.span_lengths, minlength=4)[1:] for i in instances)
        return counts / counts.sum()

    fit_first, per_start = shares(fit_first_sample), shares(sample)
    np.testing.assert_allclose(fit_first, [6 / 11, 3 / 11, 2 / 11], atol=0.04)
    assert fit_first[0] > 6 / 11 and fit_first[2] < 2 / 11
    assert per_start[0] > fit_first[0] + 0.015 and per_start[2] < fit_first[2]


def test_whole_words_and_specials(sample, tables):
    """Masked tokens are whole words; [CLS]/[SEP] never; spans count whole words."""
    for instance in sample:
        original = original_ids(instance)
        starts, ends, _ = masking.word_spans(original, tables)
        masked = np.zeros(len(original), bool)
        masked[instance.mask_positions] = True
        word_token = ~tables.special[original]
        per_word = [masked[s:e][word_token[s:e]] for s, e in zip(starts, ends)]
        assert all(w.all() or not w.any() for w in per_word)
        assert sum(w.all() for w in per_word) == instance.span_lengths.sum()
        assert not tables.special[original[instance.mask_positions]].any()
        assert np.all(np.diff(instance.mask_positions) > 0)


def test_budget_and_cap(sample, corpus, tables):
    """15% of the tokens (rounded, at least 1), never more than the cap."""
    shortfall = 0
    for instance in sample:
        budget = masking.prediction_budget(len(instance.token_ids), 0.15, 20)
        assert len(instance.mask_positions) <= budget
        shortfall += budget - len(instance.mask_positions)
    # Only when no whole word fits the remaining room (rare) is the budget not met.
    assert shortfall <= 0.01 * sum(len(i.mask_positions) for i in sample)
    capped = make_instances(corpus[:5], tables, 3, 1, max_seq_length=256,
                            max_predictions_per_seq=7)
    assert max(len(i.mask_positions) for i in capped) == 7


def test_replacements_80_10_10(sample, tables):
    """~23,700 masked tokens: sd of a 10% share is 0.002, of 80% 0.0026; tolerance 0.01."""
    shown = np.concatenate([i.token_ids[i.mask_positions] for i in sample])
    labels = np.concatenate([i.mask_ids for i in sample])
    is_mask = shown == tables.mask_id
    is_kept = ~is_mask & (shown == labels)
    is_random = ~is_mask & ~is_kept
    np.testing.assert_allclose([is_mask.mean(), is_random.mean(), is_kept.mean()],
                               [0.8, 0.1, 0.1], atol=0.01)
    assert not tables.special[shown[is_random]].any()
    # Positions not predicted are untouched.
    for instance in sample[:200]:
        untouched = np.setdiff1d(np.arange(len(instance.token_ids)), instance.mask_positions)
        assert not np.any(instance.token_ids[untouched] == tables.mask_id)


def test_sop_pairs_are_consecutive_text_in_or_out_of_order(corpus, tables):
    """Without truncation, A+B (label 0) or B+A (label 1) is a slice of the document;
    labels are balanced: ~1,000 pairs, sd 0.016, tolerance 0.06. (With `split`,
    single-sentence chunks are such pairs too.)"""
    rng = np.random.default_rng(4)
    opts = instances.InstanceOptions(max_seq_length=4096, short_seq_prob=0.5,
                                     single_sentence="split")
    labels = []
    for _ in range(40):
        for doc in corpus:
            text = doc.tokens.tobytes()
            for a, b, label in instances.segment_pairs(doc, rng, tables, opts):
                first, second = (a, b) if label == instances.SOP_IN_ORDER else (b, a)
                assert np.concatenate([first, second]).tobytes() in text
                labels.append(label)
    assert abs(np.mean(labels) - 0.5) < 0.06


@pytest.fixture(scope="module")
def word_documents(tokenizer):
    """Three documents of 12 sentences, 10 to 43 tokens, each with words of its own."""
    words = [["ship", "sea", "harbour"], ["doctor", "village", "ledger"], ["wind", "storm"]]
    return [tokenize_document(tokenizer, [" ".join(ws * (k + 3)) + "." for k in range(12)])
            for ws in words]


@pytest.mark.parametrize("nsp", [False, True])
def test_single_sentences_take_b_from_another_document(word_documents, tables, nsp):
    """The reference: a chunk of one sentence is A, B comes from another document
    and the label is 1, for SOP too; other SOP pairs are this document's text."""
    vocab = [set(d.tokens.tolist()) for d in word_documents]
    opts = instances.InstanceOptions(max_seq_length=24, random_next_sentence=nsp)
    rng = np.random.default_rng(5)
    random_b = 0
    for _ in range(10):
        for k, doc in enumerate(word_documents):
            others = word_documents[:k] + word_documents[k + 1:]
            sentences = [doc.tokens[s:e].tobytes() for s, e in zip(doc.starts, doc.ends)]
            for a, b, label in instances.segment_pairs(doc, rng, tables, opts, others):
                assert set(a.tolist()) <= vocab[k]
                if set(b.tolist()) <= vocab[k]:
                    assert label == 0 or not nsp  # SOP: in order or swapped
                    continue
                assert label == 1
                random_b += 1
                if not nsp:  # only single sentences (truncated to fit) take a random B
                    assert any(a.tobytes() in sentence for sentence in sentences)
    assert random_b > 100  # sentences of 10 to 43 tokens, a target of 21


def test_nsp_negatives_come_from_other_documents(word_documents, tables):
    """With random_next_sentence, label 1 pairs take B from another document; with
    `split`, every chunk is a 50/50 draw: ~600 pairs, sd 0.02, tolerance 0.07."""
    vocab = [set(d.tokens.tolist()) for d in word_documents]
    rng = np.random.default_rng(5)
    opts = instances.InstanceOptions(max_seq_length=48, random_next_sentence=True,
                                     single_sentence="split")
    labels = []
    for _ in range(30):
        for k, doc in enumerate(word_documents):
            others = word_documents[:k] + word_documents[k + 1:]
            for a, b, label in instances.segment_pairs(doc, rng, tables, opts, others):
                assert set(a.tolist()) <= vocab[k]
                in_doc = set(b.tolist()) <= vocab[k]
                assert in_doc == (label == instances.NSP_NEXT)
                labels.append(label)
    assert abs(np.mean(labels) - 0.5) < 0.07


@pytest.mark.parametrize("target_length", ["per_document", "per_chunk"])
def test_target_length_drawn_per_document_or_per_chunk(tables, target_length):
    """Sentences of one token each: a chunk is exactly the target long, so with
    short_seq_prob=1 the pair lengths of a document (but its last) show the draws."""
    document = TokenizedDocument(np.arange(100, 400, dtype=np.int32), np.arange(1, 301))
    opts = instances.InstanceOptions(max_seq_length=40, short_seq_prob=1.0,
                                     target_length=target_length)
    rng = np.random.default_rng(3)
    for _ in range(20):
        lengths = {len(a) + len(b) for a, b, _ in list(
            instances.segment_pairs(document, rng, tables, opts))[:-1]}
        assert (len(lengths) == 1) == (target_length == "per_document"), lengths


def test_truncation_and_lengths(corpus, tables):
    for instance in make_instances(corpus[:10], tables, 6, 2, max_seq_length=24):
        ids, segments = instance.token_ids, instance.segment_ids
        assert len(ids) <= 24
        seps = np.flatnonzero(original_ids(instance) == tables.sep_id)
        assert ids[0] == tables.cls_id and len(seps) == 2 and seps[1] == len(ids) - 1
        assert seps[0] >= 2 and seps[1] - seps[0] >= 2  # A and B not empty
        assert not segments[:seps[0] + 1].any() and segments[seps[0] + 1:].all()
    rng = np.random.default_rng(0)
    for len_a, len_b in [(50, 3), (3, 50), (40, 40), (10, 10)]:
        cut = instances.truncate_pair(len_a, len_b, 21, rng)
        new_a, new_b = len_a - cut[0] - cut[1], len_b - cut[2] - cut[3]
        assert new_a + new_b == min(21, len_a + len_b) and min(new_a, new_b) >= 1
        if len_a + len_b > 21:
            assert abs(new_a - new_b) <= 1 or min(new_a, new_b) in (len_a, len_b)


def test_one_sentence_chunks_are_cut_inside(tokenizer, tables):
    """With `split`, a sentence longer than the target is cut at a word boundary."""
    doc = tokenize_document(tokenizer, [" ".join(["lighthouse keeper"] * 30) + "."])
    rng = np.random.default_rng(7)
    opts = instances.InstanceOptions(max_seq_length=32, single_sentence="split")
    pairs = list(instances.segment_pairs(doc, rng, tables, opts))
    assert len(pairs) == 1
    a, b, _ = pairs[0]
    assert len(a) + len(b) == 29
    assert not tables.continues_word[a[0]] and not tables.continues_word[b[0]]
    single = TokenizedDocument(np.array([100], np.int32), np.array([1]))
    assert list(instances.segment_pairs(single, rng, tables, opts)) == []


def test_same_seed_same_instances(corpus, tables):
    def fingerprint(seed):
        return [(i.token_ids.tobytes(), i.mask_positions.tobytes(), i.sop_label)
                for i in make_instances(corpus[:8], tables, seed, 1, max_seq_length=64)]

    assert fingerprint(11) == fingerprint(11)
    assert fingerprint(11) != fingerprint(12)
