"""A new vocabulary type brings its own trainer: this file defines one (a character
vocabulary), registers it, and trains it through `tokenizer train`'s function,
touching nothing in albert_tf/. The shared base supplies the rest: the
tokenizer's ids and lookups (`HostBase`), building it and saving its file
(`VocabularyType`), and the trainer's checks and corpus reading (`trainers`)."""

import collections
import os

import pytest

from albert_tf import load_tokenizer
from albert_tf.tokenizer import base
from albert_tf.tokenizer.host_base import HostBase
from albert_tf.tokenizer.trainers import (TrainSettings, check_corpus, corpus_lines, train,
                                          trained_line)

SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
MAGIC = "#characters"


class CharacterVocab:
    """A character list: the line MAGIC, then one token a line, SPECIAL first."""

    def __init__(self, source):
        if isinstance(source, str):
            with open(source, encoding="utf-8") as f:
                source = f.read().split("\n")[1:-1]
        self.tokens = list(source)
        self.ids = {t: i for i, t in enumerate(self.tokens)}
        self.special_ids = {name: self.ids[t] for name, t in
                            zip(("pad", "unk", "cls", "sep", "mask"), SPECIAL)}
        self.size = len(self.tokens)

    def piece(self, index):
        return self.tokens[index]

    def resolve_lowercase(self, lowercase):
        return bool(lowercase)

    def file_bytes(self):
        return "\n".join([MAGIC, *self.tokens, ""]).encode("utf-8")


class CharacterTokenizer(HostBase):
    """Host form: one id per character, [UNK] for the others."""

    vocabulary_type = "characters"
    vocabulary_class = CharacterVocab

    def __init__(self, path, lowercase=None):
        self.load_vocabulary(path, lowercase)

    def encode(self, text):
        text = text.lower() if self.lowercase else text
        return [self.vocab.ids.get(c, self.unk_id) for c in text if not c.isspace()]


class CharacterType(base.VocabularyType):
    name = "characters"
    file_name = "chars.txt"
    folder_files = ("chars.txt",)
    description = "a character list (chars.txt)"
    host_form = CharacterTokenizer

    def recognizes(self, path):
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC.encode()

    def train(self, input_files, vocab_size, output, lowercase=False, verbose=False):
        check_corpus(input_files, vocab_size, len(SPECIAL), "the special tokens")
        counts = collections.Counter()
        for line in corpus_lines(input_files, lambda line: line.lower() if lowercase else line):
            counts.update(c for c in line if not c.isspace())
        # The most frequent first; ties in code point order, so the file is deterministic.
        kept = sorted(counts, key=lambda c: (-counts[c], c))[:vocab_size - len(SPECIAL)]
        vocab = CharacterVocab([*SPECIAL, *kept])
        os.makedirs(output, exist_ok=True)
        path = os.path.join(output, self.file_name)
        with open(path, "wb") as f:
            f.write(vocab.file_bytes())
        return trained_line(path, vocab, "characters", lowercase)


@pytest.fixture
def characters():
    registered = base.register(CharacterType())
    yield registered
    base.REGISTRY.unregister(registered.name)


def test_a_registered_type_trains_through_the_command(characters, tmp_path):
    for name, text in (("a.txt", "abba cab\n"), ("b.txt", "Bad dab\n")):
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert "characters" in base.trainable_types()
    settings = TrainSettings(type="characters", input=(str(tmp_path / "*.txt"),),
                             vocab_size=8, output=str(tmp_path / "out"), lowercase=True)
    line = train(settings)
    path = tmp_path / "out" / "chars.txt"
    assert line == (f"wrote {path} (8 characters, special ids {{'pad': 0, 'unk': 1, 'cls': 2, "
                    f"'sep': 3, 'mask': 4}}, uncased)")
    # Lowercased: a 5, b 5, d 2, c 1 -> a, b, d kept beside the five special tokens.
    assert path.read_text(encoding="utf-8").split("\n")[1:-1] == [*SPECIAL, "a", "b", "d"]
    tokenizer = load_tokenizer(str(tmp_path / "out"), host=True)
    assert isinstance(tokenizer, CharacterTokenizer)
    assert tokenizer.encode("dab c") == [7, 5, 6, 1]
    assert (tokenizer.id_to_piece(7), tokenizer.unk_id, tokenizer.vocabulary_size) == ("d", 1, 8)
    with pytest.raises(ValueError, match="vocab_size must be an integer > 5 .the special "
                                         "tokens., got 5"):
        characters.train([str(tmp_path / "a.txt")], 5, str(tmp_path / "o"))


def test_the_base_saves_the_vocabulary_and_refuses_a_missing_form(characters, tmp_path):
    (tmp_path / "chars.txt").write_bytes(CharacterVocab([*SPECIAL, "x", "y"]).file_bytes())
    tokenizer = load_tokenizer(str(tmp_path), host=True)
    (tmp_path / "saved").mkdir()
    record = base.save_vocabulary(tokenizer, str(tmp_path / "saved"))
    assert record == {"type": "characters", "file": "chars.txt", "lowercase": False}
    again = load_tokenizer(str(tmp_path / "saved"), host=True)
    assert again.encode("y x z") == [6, 5, 1]
    with pytest.raises(ValueError, match="the characters vocabulary type has no in-graph "
                                         "tokenizer"):
        load_tokenizer(str(tmp_path / "saved"))


def test_the_type_names_come_from_the_registry(characters):
    with pytest.raises(ValueError, match="type must be one of characters, sentencepiece, "
                                         "wordpiece, got 'bpe'"):
        TrainSettings(type="bpe", input=("x",), vocab_size=8, output="o")


def test_a_type_without_a_trainer_is_not_offered(characters, monkeypatch):
    monkeypatch.delattr(CharacterType, "train")
    assert "characters" not in base.trainable_types()
    with pytest.raises(ValueError, match="the characters vocabulary type has no trainer"):
        characters.train(["x"], 8, "o")
