"""WordPieceTokenizer (in-graph) and HostWordPieceTokenizer: reference ids, offsets, edge cases."""

import json
import os
import random
import unicodedata

import pytest
import tensorflow as tf

from albert_tf.tokenizer import HostWordPieceTokenizer, WordPieceTokenizer
from albert_tf.tokenizer.wordpiece import chars
from albert_tf.tokenizer.normalization import OTHER, case_class
from conftest import FIXTURES, SHARED

VOCAB = os.path.join(FIXTURES, "wordpiece", "vocab.txt")
SUBSET = os.path.join(FIXTURES, "wordpiece", "tokenization_reference.jsonl")
FULL = os.path.join(SHARED, "fixtures", "wordpiece", "tokenization_reference.jsonl")
# Capitals for a cased vocabulary made from the uncased one.
CAPITALS = list("ABCDEFGHIJKLMNOPQRSTUVWXYZΣÉ") + ["##" + c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"]


def read_reference(path, expected_rows):
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    assert len(rows) == expected_rows
    return rows


@pytest.fixture(scope="module")
def host():
    return HostWordPieceTokenizer(VOCAB)


@pytest.fixture(scope="module")
def graph():
    return WordPieceTokenizer(VOCAB)


@pytest.fixture(scope="module")
def cased_tokens(host):
    return list(host.tokens) + CAPITALS


def graph_offsets(tok, texts, compiled=False):
    """`tokenize_with_offsets` as lists, eager or in a `tf.function`."""
    run = tf.function(tok.tokenize_with_offsets) if compiled else tok.tokenize_with_offsets
    ids, starts, ends = run(tf.constant(texts))
    return [tuple(map(list, row)) for row in zip(ids.to_list(), starts.to_list(), ends.to_list())]


def check_reference(host, graph, rows):
    """Ids of both forms and both graph paths equal the reference; offsets equal."""
    texts, expected = [r["text"] for r in rows], [r["ids"] for r in rows]
    assert [i for i, (t, e) in enumerate(zip(texts, expected)) if host.encode(t) != e] == []
    assert tf.function(graph)(tf.constant(texts)).to_list() == expected
    with_offsets = graph_offsets(graph, texts, compiled=True)
    assert [row[0] for row in with_offsets] == expected
    assert with_offsets == [tuple(host.encode_with_offsets(t)) for t in texts]
    for text, (ids, starts, ends) in zip(texts, with_offsets):
        check_spans(host, text, ids, starts, ends)


def check_spans(host, text, ids, starts, ends):
    """Each span selects the text its token came from, in order."""
    for index, start, end in zip(ids, starts, ends):
        assert 0 <= start < end <= len(text)
        emitted = "".join(host.basic_tokenize(text[start:end]))
        piece = host.id_to_piece(index).removeprefix("##")
        assert index == host.unk_id or piece in emitted, (text[start:end], piece)
    assert starts == sorted(starts) and ends == sorted(ends)


# Reference ids (google-research/albert tokenization.py): 100% identical.

def test_reference_subset(host, graph):
    check_reference(host, graph, read_reference(SUBSET, 100))


@pytest.mark.shared
def test_reference_full_set(host, graph):
    check_reference(host, graph, read_reference(FULL, 1048))


# A transcription of google-research/bert's BasicTokenizer + WordpieceTokenizer,
# for random text the reference file cannot cover.

def _reference_basic(text, lowercase):
    def punctuation(c):
        cp = ord(c)
        return (33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126
                or unicodedata.category(c).startswith("P"))

    text = "".join(" " if c in " \t\n\r" or unicodedata.category(c) == "Zs" else c
                   for c in text if not (ord(c) in (0, 0xFFFD) or (
                       c not in "\t\n\r" and unicodedata.category(c) in ("Cc", "Cf"))))
    text = "".join(f" {c} " if chars.is_cjk(ord(c)) else c for c in text)
    words = []
    for token in text.split():
        if lowercase:
            token = "".join(c for c in unicodedata.normalize("NFD", token.lower())
                            if unicodedata.category(c) != "Mn")
        current = None
        for c in token:
            if punctuation(c):
                words.append(c)
                current = None
            elif current is None:
                words.append(c)
                current = len(words) - 1
            else:
                words[current] += c
    return words


def reference_ids(text, tokens, lowercase):
    vocab = {t: i for i, t in enumerate(tokens)}
    out = []
    for word in _reference_basic(text, lowercase):
        start, pieces = 0, []
        while start < len(word) and len(word) <= 200:
            end = len(word)
            while end > start and (word[start:end] if start == 0 else
                                   "##" + word[start:end]) not in vocab:
                end -= 1
            if end == start:
                break
            pieces.append(vocab[word[start:end] if start == 0 else "##" + word[start:end]])
            start = end
        out.extend(pieces if start == len(word) else [vocab["[UNK]"]])
    return out


# The 25 spacing marks of non-zero combining class (see wordpiece_chars).
REORDERED = {0x1715, 0x1734, 0x1B44, 0x1BAA, 0x1BF2, 0x1BF3, 0x302E, 0x302F, 0xA953, 0xA9C0,
             0x111C0, 0x11235, 0x1134D, 0x116B6, 0x1193D, 0x16FF0, 0x16FF1, 0x1D165, 0x1D166,
             0x1D16D, 0x1D16E, 0x1D16F, 0x1D170, 0x1D171, 0x1D172}


def random_texts(seed, count):
    rng = random.Random(seed)
    pool = list("aAbΣσςΟΔΟΣİ\u0301'.,!？ \t\n\x00\x01\u00ad\u200b\u3000\u2028中文豈ガ가한éﬁ½Ⅱ#\ufffd")
    pool += [chr(rng.randrange(0x110000)) for _ in range(300)]
    pool = [c for c in pool if not 0xD800 <= ord(c) < 0xE000 and ord(c) not in REORDERED]
    return ["".join(rng.choice(pool) for _ in range(rng.randrange(30))) for _ in range(count)]


@pytest.mark.parametrize("lowercase", [True, False])
def test_random_text_matches_the_reference_algorithm(host, cased_tokens, lowercase):
    tokens = list(host.tokens) if lowercase else cased_tokens
    host_tok = HostWordPieceTokenizer(tokens, lowercase)
    graph_tok = WordPieceTokenizer(tokens, lowercase)
    texts = random_texts(lowercase, 1000) + ["ΑΣ ΑΣ'Β ΑΣ\u00adΒ Σ \u0301Σ ΑΣ\x01Β ΑΣ中 ΑΣ\u2028"]
    expected = [reference_ids(t, tokens, lowercase) for t in texts]
    assert [host_tok.encode(t) for t in texts] == expected
    got = graph_offsets(graph_tok, texts, compiled=True)
    assert got == [tuple(host_tok.encode_with_offsets(t)) for t in texts]
    assert tf.function(graph_tok)(tf.constant(texts)).to_list() == expected


def test_words_longer_than_200_characters_are_unknown(host, graph):
    # Characters, not bytes: 150 katakana are 450 bytes of UTF-8.
    texts = ["a" * 200, "a" * 201, "é" * 201 + " b", "ガ" * 150 + "。"]
    assert [host.unk_id in host.encode(t) for t in texts] == [False, True, True, False]
    assert host.encode(texts[1]) == [host.unk_id]
    assert host.encode_with_offsets(texts[2]) == ([host.unk_id, host.piece_to_id("b")],
                                                  [0, 202], [201, 203])
    assert graph_offsets(graph, texts) == [tuple(host.encode_with_offsets(t)) for t in texts]
    assert graph(texts).to_list() == [host.encode(t) for t in texts]


def test_greedy_longest_match_never_backtracks():
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "abc", "ab", "##cd", "##d", "x"]
    host_tok, graph_tok = HostWordPieceTokenizer(tokens), WordPieceTokenizer(tokens)
    # "abcd": "abc" + "##d"; "abce": "abc" leaves "e" uncovered, so [UNK]
    # (not "ab" + ...), as the reference.
    texts = ["abcd abce abcdx", "x,ab"]
    assert [host_tok.encode(t) for t in texts] == [[5, 8, 1, 1], [9, 1, 6]]
    assert graph_tok(texts).to_list() == [[5, 8, 1, 1], [9, 1, 6]]


@pytest.mark.parametrize("text, spans", [
    ("Caf\u00e9", ["Caf\u00e9"]),                        # "cafe"
    ("Cafe\u0301 au", ["Cafe\u0301", "au"]),   # the stripped accent belongs to the "e"
    ("a\u200bb, c", ["a\u200bb", ",", "c"]),    # so does a dropped format character
    ("\x01 ok", ["ok"]),                        # which after a break belongs to nothing
    ("\uff21\uff22\uff23\u4e2d\uff01", ["\uff21", "\uff22", "\uff23", "\u4e2d", "\uff01"]),
    ("\u0130stanbul", ["\u0130s", "tan", "bu", "l"]),    # "is" "##tan" "##bu" "##l"
    ("\ud55c\uad6d", ["\ud55c"] * 3 + ["\uad6d"] * 3),      # a piece per jamo, each the syllable
    ("\u039f\u0394\u039f\u03a3.", ["\u039f", "\u0394", "\u039f", "\u03a3", "."]),  # final sigma
])
def test_offsets_examples(host, graph, text, spans):
    ids, starts, ends = host.encode_with_offsets(text)
    assert [text[s:e] for s, e in zip(starts, ends)] == spans
    assert ids == reference_ids(text, host.tokens, True)
    assert graph_offsets(graph, [text]) == [(ids, starts, ends)]


def test_documented_deviation_spacing_marks_out_of_order(host, graph):
    """NFD would swap U+1D16D (class 226) and U+1D165 (216); the tokenizers keep the order."""
    text = "a\U0001D16D\U0001D165"
    assert host.basic_tokenize(text) == [text]
    assert _reference_basic(text, True) == ["a\U0001D165\U0001D16D"]
    assert graph(text).numpy().tolist() == host.encode(text)


def test_bytes_and_invalid_utf8(host, graph):
    texts = ["中文".encode("utf-8") + b"\xff\xfeab", b"\xe4\xb8", "x".encode("utf-8")]
    expected = [host.encode_with_offsets(t) for t in texts]
    assert expected[0][0] == host.encode("中文ab")  # U+FFFD is dropped, as "ignore" would
    assert expected[0][1] == [0, 1, 4]  # offsets index the decoded text (two U+FFFD)
    assert graph_offsets(graph, texts) == [tuple(e) for e in expected]


def test_scalar_empty_and_bad_inputs(host, graph):
    assert graph("ALBERT模型！").numpy().tolist() == host.encode("ALBERT模型！")
    ids, starts, ends = graph.tokenize_with_offsets("中 文")
    assert (ids.numpy().tolist(), starts.numpy().tolist(), ends.numpy().tolist()) == (
        host.encode("中文"), [0, 2], [1, 3])
    assert graph(["", " \t\u3000", "\x00"]).to_list() == [[], [], []]
    assert graph(tf.constant([], tf.string)).to_list() == []
    assert host.encode("") == [] and host.encode_with_offsets(" ") == ([], [], [])
    with pytest.raises(ValueError, match="expects strings, got dtype int32"):
        graph(tf.constant([1, 2]))
    with pytest.raises(ValueError, match="a scalar or a 1-D batch"):
        graph(tf.constant([["a"]]))


def test_character_tables_hold_the_assumptions_the_tokenizers_rely_on():
    emissions = chars.emission_table()
    for char, emission in emissions.items():
        assert not any(c.isspace() for c in emission), hex(ord(char))
        assert chars.is_cjk(ord(char)) or not any(chars.is_cjk(ord(c)) for c in emission)
    # Word breaks and CJK characters end a Final_Sigma context for str.lower
    # itself: the tables' forcing them to OTHER changes nothing.
    starts, values = chars.property_ranges()
    for start, end, value in zip(starts, starts[1:] + (0x110000,), values):
        if value & chars.KIND_MASK in (chars.BREAK, chars.CJK):
            assert all(case_class(cp) == OTHER for cp in range(start, min(end, start + 64)))
