"""`train --type=wordpiece`: BERT's special tokens first, casing recorded, and the vocabulary
round-trips through both tokenizers."""

import json
import os
import random
import subprocess
import sys

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from albert_tf import load_tokenizer
from albert_tf.tokenizer import HostWordPieceTokenizer, WordPieceTokenizer, train_wordpiece
from albert_tf.tokenizer.wordpiece.host import basic_tokenize

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def write_corpus(path, seed=0, lines=800):
    """Random words of random syllables (some capitalized, some accented), Chinese
    characters, numbers and full-width punctuation."""
    rng = random.Random(seed)
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeioué"]
    hanzi = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年"
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(lines):
            words = ["".join(rng.choice(syllables) for _ in range(rng.randrange(1, 4)))
                     for _ in range(rng.randrange(3, 9))]
            words = [w.capitalize() if rng.random() < 0.3 else w for w in words]
            chinese = "".join(rng.choice(hanzi) for _ in range(rng.randrange(2, 12)))
            f.write(f"{' '.join(words)}, {chinese}，{rng.randrange(1900, 2000)}年！\n")
    return str(path)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "albert_tf.tokenizer", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus") / "corpus.txt")


def corpus_lines(corpus):
    with open(corpus, encoding="utf-8") as f:
        return [line for line in f][:200] + ["Kazoo 的 Zuba, 1999 ÜBER 未见过"]


def hf_ids(vocab_file, words):
    """The `tokenizers` package's own WordPiece on BERT's words: a second opinion."""
    with open(vocab_file, encoding="utf-8") as f:
        tokens = f.read().split("\n")[:-1]
    hf = Tokenizer(models.WordPiece({t: i for i, t in enumerate(tokens)}, unk_token="[UNK]",
                                    max_input_chars_per_word=200))
    hf.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return hf.encode(" ".join(words)).ids


@pytest.mark.parametrize("lowercase", [True, False])
def test_trained_vocabulary_round_trips(corpus, tmp_path, lowercase):
    path = train_wordpiece([corpus], 500, str(tmp_path / "wp"), lowercase=lowercase)
    assert path == str(tmp_path / "wp" / "vocab.txt")
    with open(tmp_path / "wp" / "tokenizer_config.json") as f:
        assert json.load(f) == {"do_lower_case": lowercase}
    host, graph = load_tokenizer(str(tmp_path / "wp"), host=True), load_tokenizer(
        str(tmp_path / "wp"))
    assert isinstance(host, HostWordPieceTokenizer) and isinstance(graph, WordPieceTokenizer)
    assert host.lowercase is lowercase and host.tokens[:5] == tuple(SPECIAL)
    assert (host.pad_id, host.unk_id, host.cls_id, host.sep_id, host.mask_id) == (0, 1, 2, 3, 4)
    assert 100 < host.vocabulary_size <= 500
    assert any(len(t) > 3 and t.startswith("##") for t in host.tokens)  # merges were learnt
    lines = corpus_lines(corpus)
    ids = [host.encode(line) for line in lines]
    assert graph(lines).to_list() == ids
    for line, line_ids in zip(lines[:-1], ids):
        words = basic_tokenize(line, lowercase)
        assert host.unk_id not in line_ids
        rebuilt = []
        for token in host.tokenize(line):
            if token.startswith("##"):
                rebuilt[-1] += token[2:]
            else:
                rebuilt.append(token)
        assert rebuilt == words
        assert line_ids == hf_ids(path, words)


def test_cli_trains_a_wordpiece_vocabulary(corpus, tmp_path):
    out = tmp_path / "zh"
    result = run_cli("train", "--type=wordpiece", f"--input={corpus}", "--vocab_size=400",
                     f"--output={out}", "--lowercase")
    assert result.returncode == 0, result.stderr
    assert f"wrote {out / 'vocab.txt'} (" in result.stdout and "uncased" in result.stdout
    assert "'pad': 0, 'unk': 1, 'cls': 2, 'sep': 3, 'mask': 4" in result.stdout
    assert load_tokenizer(str(out), host=True).vocabulary_size <= 400


@pytest.mark.parametrize("args,message", [
    (["train", "--type=wordpiece", "--input={corpus}", "--vocab_size=50", "--output={out}"],
     "for its characters alone, more than vocab_size=50: raise vocab_size"),
    (["train", "--type=wordpiece", "--input=/no/such.txt", "--vocab_size=50",
      "--output={out}"], "--input: /no/such.txt: no such file or folder (no folder /no)"),
    (["train", "--type=bpe", "--input={corpus}", "--vocab_size=50", "--output={out}"],
     "error: type must be one of sentencepiece, wordpiece, got 'bpe'"),
])
def test_cli_errors(corpus, tmp_path, args, message):
    result = run_cli(*[a.format(corpus=corpus, out=tmp_path / "out") for a in args])
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert message in result.stderr


def test_library_rejects_bad_arguments(corpus, tmp_path):
    with pytest.raises(ValueError, match=r"vocab_size must be an integer > 5 .* got 5"):
        train_wordpiece([corpus], 5, str(tmp_path / "m"))
    with pytest.raises(ValueError, match="input_files is empty"):
        train_wordpiece([], 300, str(tmp_path / "m"))
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \t\n")
    with pytest.raises(ValueError, match="no words in .*empty.txt"):
        train_wordpiece([str(empty)], 300, str(tmp_path / "m"))
