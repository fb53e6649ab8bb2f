"""`python -m albert_tf.tokenizer train`: ALBERT's SentencePiece settings, casing, errors."""

import os
import random
import subprocess
import sys

import pytest
import sentencepiece as spm

from albert_tf.tokenizer import AlbertTokenizer, HostTokenizer, train_sentencepiece
from test_tokenizer import reference_encode

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXTS = ["Zuba Kemo, in 1950.", "Über Café naïve", "  BAKE  lomi  ", "ΟΔΟΣ", ""]


def write_corpus(path, seed=0, lines=2000):
    """Random words of random syllables, some capitalized, with numbers and accents."""
    rng = random.Random(seed)
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(lines):
            words = ["".join(rng.choice(syllables) for _ in range(rng.randrange(1, 4)))
                     for _ in range(rng.randrange(3, 12))]
            words = [w.capitalize() if rng.random() < 0.3 else w for w in words]
            f.write(" ".join(words) + f", in {rng.randrange(1900, 2000)}. Über Café\n")
    return str(path)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "albert_tf.tokenizer", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus") / "corpus.txt")


def test_cli_trains_an_uncased_albert_model(corpus, tmp_path):
    prefix = str(tmp_path / "spm" / "m")
    pattern = os.path.join(os.path.dirname(corpus), "*.txt")  # a quoted glob, as the README
    result = run_cli("train", f"--input={pattern}", "--vocab_size=300", f"--output={prefix}",
                     "--lowercase")
    assert result.returncode == 0, result.stderr
    assert os.path.isfile(prefix + ".model") and os.path.isfile(prefix + ".vocab")
    assert "300 pieces" in result.stdout and "uncased" in result.stdout
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    assert [sp.id_to_piece(i) for i in range(13)] == [
        "<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]", "(", ")", '"', "-", ".", "\u2013",
        "\u00a3", "\u20ac"]
    assert sp.bos_id() == -1 and sp.eos_id() == -1
    tok = AlbertTokenizer(prefix + ".model")
    assert tok.lowercase is True and tok.vocabulary_size == 300
    assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 1, 2, 3, 4)
    host = HostTokenizer(prefix + ".model")
    for text in TEXTS:
        expected = reference_encode(sp, text, lowercase=True)
        assert host.encode(text) == expected
        assert tok(text).numpy().tolist() == expected


def test_cased_training_is_detected_and_checked(corpus, tmp_path):
    path = train_sentencepiece([corpus], 300, str(tmp_path / "cased"), lowercase=False)
    sp = spm.SentencePieceProcessor(model_file=path)
    tok = AlbertTokenizer(path)
    assert tok.lowercase is False
    for text in TEXTS:
        assert tok(text).numpy().tolist() == reference_encode(sp, text, lowercase=False)
    with pytest.raises(ValueError, match=r"lowercase=True contradicts the vocabulary of "
                                         r".*cased.model, which is cased: \d+ of 300 pieces"):
        HostTokenizer(path, lowercase=True)


@pytest.mark.parametrize("args,message", [
    (["train", "--input=/no/such/file.txt", "--vocab_size=300", "--output=/tmp/x"],
     "--input: /no/such/file.txt: no such file or folder (no folder /no/such)"),
    (["train", "{corpus}", "{corpus}", "--vocab_size=300", "--output={out}"],
     "the shell expanded an unquoted glob; quote it (--input='corpus/*.txt')"),
    (["train", "--input={corpus}", "--vocab_size=100000", "--output={out}"],
     "Vocabulary size too high"),
    (["train", "--input={corpus}"], "missing required flag(s): --vocab_size, --output"),
    (["fit", "--input={corpus}"], "expected one command, one of ['train']"),
])
def test_cli_errors_are_one_line(corpus, tmp_path, args, message):
    args = [a.format(corpus=corpus, out=tmp_path / "out") for a in args]
    result = run_cli(*args)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("error: ") and message in lines[0]


def test_library_rejects_bad_arguments(corpus, tmp_path):
    with pytest.raises(ValueError, match=r"vocab_size must be an integer > 13 .* got 5"):
        train_sentencepiece([corpus], 5, str(tmp_path / "m"))
    with pytest.raises(ValueError, match="input_files is empty"):
        train_sentencepiece([], 300, str(tmp_path / "m"))
    with pytest.raises(FileNotFoundError, match="input file not found: .*missing.txt"):
        train_sentencepiece([corpus, str(tmp_path / "missing.txt")], 300, str(tmp_path / "m"))
