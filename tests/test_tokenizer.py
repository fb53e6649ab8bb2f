"""AlbertTokenizer (in-graph) and HostTokenizer: reference ids, offsets, bad input."""

import json
import os
import unicodedata

import pytest
import sentencepiece as spm
import tensorflow as tf
from sentencepiece import sentencepiece_model_pb2 as model_pb2

from albert_tf.tokenizer import AlbertTokenizer, HostTokenizer, preprocess_text
from albert_tf.tokenizer.normalization import aligned_emissions
from conftest import FIXTURES

SPM_DIR = os.path.join(FIXTURES, "spm")
MODEL = os.path.join(SPM_DIR, "albert_30k_clean.model")
REFERENCE = os.path.join(SPM_DIR, "tokenization_reference.jsonl")


@pytest.fixture(scope="module")
def graph_tok(spm_tokenizer):
    return spm_tokenizer


@pytest.fixture(scope="module")
def host_tok():
    return HostTokenizer(MODEL)


@pytest.fixture(scope="module")
def reference():
    with open(REFERENCE, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    assert len(rows) == 403
    return rows


def reference_encode(sp, text, lowercase=True):
    """google-research/albert `encode_ids(preprocess_text(text))`, written on pieces."""
    out = []
    for piece in sp.encode(preprocess_text(text, lowercase), out_type=str):
        if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
            new = sp.encode(piece[:-1].replace("\u2581", ""), out_type=str)
            if piece[0] != "\u2581" and new and new[0][0] == "\u2581":
                new = new[1:] if len(new[0]) == 1 else [new[0][1:]] + new[1:]
            out.extend(new + [","])
        else:
            out.append(piece)
    return [sp.piece_to_id(p) for p in out]


_TRACED = []  # (tokenizer, its tokenize_with_offsets traced once: tracing takes seconds)


def graph_offsets(tok, texts):
    traced = [f for t, f in _TRACED if t is tok]
    if not traced:
        traced = [tf.function(tok.tokenize_with_offsets,
                              input_signature=[tf.TensorSpec([None], tf.string)])]
        _TRACED.append((tok, traced[0]))
    ids, starts, ends = traced[0](tf.constant(texts))
    return [(i.tolist(), s.tolist(), e.tolist())
            for i, s, e in zip(ids.numpy(), starts.numpy(), ends.numpy())]


# Reference ids: 100% identical on all 403 paragraphs.

def test_graph_ids_match_reference(graph_tok, reference):
    ids = tf.function(graph_tok)(tf.constant([r["text"] for r in reference]))
    assert isinstance(ids, tf.RaggedTensor) and ids.dtype == tf.int32
    mismatched = [i for i, (got, row) in enumerate(zip(ids.to_list(), reference))
                  if got != row["ids"]]
    assert mismatched == []


def test_host_ids_match_reference(host_tok, reference):
    assert [i for i, r in enumerate(reference) if host_tok.encode(r["text"]) != r["ids"]] == []
    texts = [r["text"] for r in reference]
    assert host_tok.encode_batch(texts) == [r["ids"] for r in reference]


def test_offsets_path_ids_match_reference(graph_tok, host_tok, reference):
    texts = [r["text"] for r in reference]
    graph = graph_offsets(graph_tok, texts)
    for text, row, got in zip(texts, reference, graph):
        assert got[0] == row["ids"]
        assert got == host_tok.encode_with_offsets(text)


def test_digit_comma_rule_applies(host_tok, graph_tok):
    # "▁1990," is one piece of the vocabulary; the rule splits it.
    assert host_tok.piece_to_id("\u25811990,") != host_tok.unk_id
    expected = [host_tok.piece_to_id(p) for p in ["\u2581in", "\u25811990", ",", "\u2581we"]]
    assert host_tok.encode("In 1990, we") == expected
    assert graph_tok("In 1990, we").numpy().tolist() == expected


def model_with_pieces(pieces):
    """The fixture model plus `pieces` with a score that makes SentencePiece prefer them."""
    proto = model_pb2.ModelProto()
    with open(MODEL, "rb") as f:
        proto.ParseFromString(f.read())
    for piece in pieces:
        proto.pieces.add(piece=piece, score=0.0, type=model_pb2.ModelProto.SentencePiece.NORMAL)
    return proto.SerializeToString()


def test_digit_comma_rule_on_pieces_without_underline():
    # ALBERT's vocabulary has no "7,"-like piece without "▁"; add some so that
    # the strip branch of the rule runs ("7," -> "7" ",", not "▁7" ",").
    proto = model_with_pieces(["7,", "42,", "\u2581x9,", "q5,"])
    sp = spm.SentencePieceProcessor(model_proto=proto)
    host, graph = HostTokenizer(proto), AlbertTokenizer(proto)
    text = "Item7, 42, x9, abq5,7, 1990, 7,"
    pieces = sp.encode(preprocess_text(text, True), out_type=str)
    assert {"7,", "42,", "\u2581x9,", "q5,"} <= set(pieces)
    expected = reference_encode(sp, text)
    assert [sp.id_to_piece(i) for i in expected][:4] == ["\u2581item", "7", ",", "\u2581"]
    assert host.encode(text) == expected
    assert graph(text).numpy().tolist() == expected
    ids, starts, ends = host.encode_with_offsets(text)
    assert ids == expected and graph_offsets(graph, [text])[0] == (ids, starts, ends)
    assert [text[s:e] for s, e in zip(starts, ends)] == [
        "Item", "7", ",", "", "42", ",", "x", "9", ",", "ab", "q", "5", ",", "7", ",", "1990",
        ",", "", "7", ","]


def test_special_ids_and_vocabulary(graph_tok, host_tok):
    for tok in (graph_tok, host_tok):
        assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 1, 2, 3, 4)
        assert tok.vocabulary_size == 30000
        assert tok.id_to_piece(3) == "[SEP]" and tok.piece_to_id("[MASK]") == 4
        with pytest.raises(ValueError, match="id 30000 is outside the vocabulary"):
            tok.id_to_piece(30000)
    assert graph_tok("this is a test").numpy().tolist() == [48, 25, 21, 1289]


# Offsets.

def spans_of(tok, text):
    ids, starts, ends = tok.encode_with_offsets(text)
    return [(tok.id_to_piece(i), text[s:e]) for i, s, e in zip(ids, starts, ends)]


@pytest.mark.parametrize("text,expected", [
    ("Café Österreich", [("▁cafe", "Café"), ("▁oster", "Öster"), ("reich", "reich")]),
    # The same words in NFD: the combining marks belong to the letter before them.
    ("Cafe\u0301 O\u0308sterreich", [("▁cafe", "Cafe\u0301"), ("▁oster", "O\u0308ster"),
                                       ("reich", "reich")]),
    ("In 1990,   we", [("▁in", "In"), ("▁1990", "1990"), (",", ","), ("▁we", "we")]),
    ("  ``Hi''  ", [("▁", ""), ('"', "``"), ("hi", "Hi"), ('"', "''")]),
    ("a (b)", [("▁a", "a"), ("▁", ""), ("(", "("), ("b", "b"), (")", ")")]),
    ("ﬁve", [("▁five", "ﬁve")]),
    ("½", [("▁1", "½"), ("<unk>", "½"), ("2", "½")]),
])
def test_offsets_examples(host_tok, graph_tok, text, expected):
    assert spans_of(host_tok, text) == expected
    ids, starts, ends = graph_tok.tokenize_with_offsets(text)
    got = [(graph_tok.id_to_piece(i), text[s:e]) for i, s, e in
           zip(ids.numpy(), starts.numpy(), ends.numpy())]
    assert got == expected


def test_empty_spans_of_underline_pieces_sit_before_the_next_text(host_tok):
    ids, starts, ends = host_tok.encode_with_offsets("a   (b)")
    assert host_tok.id_to_piece(ids[1]) == "\u2581"
    assert starts[1] == ends[1] == 4  # where "(" starts, after the whitespace


MULTILINGUAL = ["Café Österreich", "Ελληνικά: ΟΔΟΣ οδός Σίσυφος", "Привет, мир! Ёлка",
                "北京是中国的首都。", "東京は日本の首都です。カタカナ", "naïve coöperate résumé",
                "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３", "Straße İstanbul ǅemal", "한국어 텍스트"]


def _check_spans_cover_text(tok, text, ids, starts, ends):
    pieces = [tok.id_to_piece(i) for i in ids]
    assert all(0 <= s <= e <= len(text) for s, e in zip(starts, ends))
    assert starts == sorted(starts) and ends == sorted(ends)
    covered = set()
    for piece, s, e in zip(pieces, starts, ends):
        assert (s == e) == (piece == "\u2581"), (piece, text[s:e])
        covered.update(range(s, e))
        if piece != "<unk>" and s < e:
            # The piece's text comes from the span (NFKC: SentencePiece's normalizer).
            source = unicodedata.normalize("NFKC", preprocess_text(text[s:e], tok.lowercase))
            assert piece.replace("\u2581", "") in source, (piece, text[s:e])
    # Every character that does not normalize to whitespace belongs to some
    # token ("¨" is NFKD " " + U+0308, so it becomes a space, like "\t").
    emissions = aligned_emissions(text, tok.lowercase)
    assert {i for i, e in enumerate(emissions) if e.strip()} <= covered


def test_spans_map_back_multilingual(host_tok, graph_tok):
    graph = graph_offsets(graph_tok, MULTILINGUAL)
    for text, got in zip(MULTILINGUAL, graph):
        host = host_tok.encode_with_offsets(text)
        _check_spans_cover_text(host_tok, text, *host)
        assert got == host, text


def test_spans_map_back_on_reference(host_tok, reference):
    for row in reference:
        _check_spans_cover_text(host_tok, row["text"], *host_tok.encode_with_offsets(row["text"]))


# Casing.

def test_casing_detected_and_contradiction_rejected():
    assert HostTokenizer(MODEL).lowercase is True
    with pytest.raises(ValueError, match=r"lowercase=False contradicts the vocabulary of .*"
                                         r"albert_30k_clean.model, which is uncased"):
        AlbertTokenizer(MODEL, lowercase=False)
    assert AlbertTokenizer(MODEL, lowercase=True).lowercase is True
