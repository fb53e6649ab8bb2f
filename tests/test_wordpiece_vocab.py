"""WordPiece vocabularies: Google's `load_vocab` rules, special ids, casing, file recognition."""

import os
import pickle

import pytest

from albert_tf.tokenizer import HostWordPieceTokenizer, WordPieceVocab
from albert_tf.tokenizer.base import get_type
from albert_tf.tokenizer.wordpiece.vocab import parse_tokens
from conftest import FIXTURES

VOCAB = os.path.join(FIXTURES, "wordpiece", "vocab.txt")
SPM_MODEL = os.path.join(FIXTURES, "spm", "albert_30k_clean.model")
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@pytest.fixture(scope="module")
def host():
    return HostWordPieceTokenizer(VOCAB)


def test_the_chinese_vocabulary(host):
    assert host.vocabulary_size == 21128 and host.lowercase is True
    assert (host.pad_id, host.unk_id, host.cls_id, host.sep_id, host.mask_id) == (
        0, 100, 101, 102, 103)
    assert host.vocabulary_type == "wordpiece"
    assert host.id_to_piece(8013) == "！" and host.piece_to_id("!") == 106
    assert host.piece_to_id("no such token") == host.unk_id
    with pytest.raises(ValueError, match=r"id 21128 is outside the vocabulary \[0, 21128\)"):
        host.id_to_piece(21128)
    assert host.tokenize("ALBERT模型！") == ["al", "##bert", "模", "型", "！"]


def test_load_vocab_rules():
    """First field of each line; a blank line is " "; a repeat keeps its first
    id and the ids after it count distinct tokens (google-research/bert)."""
    text = "[PAD]\r\n[UNK] 17\n\n a  b\n[UNK]\n[CLS]\n \n[SEP]\n[MASK]"
    assert parse_tokens(text) == ["[PAD]", "[UNK]", " ", "a", "[CLS]", "[SEP]", "[MASK]"]
    vocab = WordPieceVocab(parse_tokens(text))
    assert vocab.special_ids == {"pad": 0, "unk": 1, "cls": 4, "sep": 5, "mask": 6}
    assert parse_tokens(vocab.text()) == list(vocab.tokens)


def test_lines_ending_in_other_whitespace(host):
    """The Chinese vocabulary's lines "\u2028" and "##\u2028" are read as " " and
    "##" (`str.strip` strips U+2028); neither can match a word."""
    assert host.id_to_piece(343) == " " and host.id_to_piece(13502) == "##"
    assert host.vocabulary_size == 21128


def test_bad_vocabularies_are_named(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK]\n[CLS]\n")
    with pytest.raises(ValueError, match=f"{path}: the vocabulary has no \\[SEP\\], \\[MASK\\]"):
        WordPieceVocab(str(path))
    path.write_bytes(b"[PAD]\n\xff\n")
    with pytest.raises(ValueError, match=f"{path}: not a WordPiece vocabulary \\(not UTF-8"):
        WordPieceVocab(str(path))
    with pytest.raises(FileNotFoundError, match="WordPiece vocabulary file not found"):
        WordPieceVocab(str(tmp_path / "missing.txt"))
    with pytest.raises(ValueError, match="a token list repeats a token"):
        WordPieceVocab(SPECIAL + ["a", "a"])
    with pytest.raises(ValueError, match="tokens must be non-empty strings, got ''"):
        WordPieceVocab(SPECIAL + [""])


def test_files_are_recognised_by_content(tmp_path):
    wordpiece, sentencepiece = get_type("wordpiece"), get_type("sentencepiece")
    assert wordpiece.recognizes(VOCAB) and not sentencepiece.recognizes(VOCAB)
    assert sentencepiece.recognizes(SPM_MODEL) and not wordpiece.recognizes(SPM_MODEL)
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n[CLS]\n")
    assert not wordpiece.recognizes(str(notes)) and not sentencepiece.recognizes(str(notes))
    assert wordpiece.folder_files == ("vocab.txt", "vocab_chinese.txt")


def test_casing_detected_and_contradiction_rejected(host):
    with pytest.raises(ValueError, match=r"lowercase=False contradicts the vocabulary of .*"
                                         r"vocab.txt, which is uncased"):
        HostWordPieceTokenizer(VOCAB, lowercase=False)
    cased = list(host.tokens) + [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"]
    assert HostWordPieceTokenizer(cased).lowercase is False
    assert HostWordPieceTokenizer(cased, lowercase=False).tokenize("Ab") == ["A", "##b"]
    with pytest.raises(ValueError, match=r"lowercase=True contradicts .* which is cased: "
                                         r"26 of \d+ tokens"):
        HostWordPieceTokenizer(cased, lowercase=True)
    # Control tokens ([unused1], <S>) do not count; a caseless vocabulary is
    # uncased unless told otherwise.
    caseless = SPECIAL + ["<S>", "[unused1]", "中", "文", "1"]
    assert HostWordPieceTokenizer(caseless).lowercase is True
    assert HostWordPieceTokenizer(caseless, lowercase=False).lowercase is False


def test_what_whole_word_masking_needs(host):
    assert host.continues_word(host.piece_to_id("##bert"))
    assert not host.continues_word(host.piece_to_id("al"))
    assert not host.continues_word(host.piece_to_id("#"))
    control = host.control_ids()
    assert control[:5] == [0, 1, 2, 3, 4] and {100, 101, 102, 103, 104, 105} <= set(control)
    assert host.piece_to_id("[unused99]") == 99 and len(control) == 106


def test_fingerprint_hashes_tokens_and_casing(host):
    tokens = list(host.tokens) + list("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    prints = {host.fingerprint(), HostWordPieceTokenizer(list(host.tokens)).fingerprint(),
              HostWordPieceTokenizer(tokens, lowercase=False).fingerprint(),
              HostWordPieceTokenizer(tokens[:-1], lowercase=False).fingerprint()}
    assert len(prints) == 3 and len(host.fingerprint()) == 16



def test_host_tokenizer_pickles(host):
    """As the SentencePiece one does (e.g. for featurization in worker processes)."""
    host.encode("缓存 cached")
    clone = pickle.loads(pickle.dumps(host))
    assert clone.encode("缓存 cached Café") == host.encode("缓存 cached Café")
