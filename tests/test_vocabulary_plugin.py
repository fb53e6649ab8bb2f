"""A new vocabulary type brings its own trainer: this file defines one (a character
vocabulary), registers it, and trains it through `tokenizer train`'s function,
touching nothing in albert_tf/."""

import collections
import os

import pytest

from albert_tf import load_tokenizer
from albert_tf.tokenizer import base
from albert_tf.tokenizer.trainers import TrainSettings, train

SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
MAGIC = "#characters"


class CharacterTokenizer:
    """Host form: one id per character, [UNK] for the others."""

    vocabulary_type = "characters"

    def __init__(self, path, lowercase=None):
        with open(path, encoding="utf-8") as f:
            self.tokens = f.read().split("\n")[1:-1]
        self.lowercase = bool(lowercase)
        self.ids = {t: i for i, t in enumerate(self.tokens)}
        self.vocabulary_size = len(self.tokens)

    def encode(self, text):
        text = text.lower() if self.lowercase else text
        return [self.ids.get(c, 1) for c in text if not c.isspace()]


class CharacterType(base.VocabularyType):
    name = "characters"
    file_name = "chars.txt"
    folder_files = ("chars.txt",)
    description = "a character list (chars.txt)"

    def recognizes(self, path):
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC.encode()

    def host(self, path, lowercase=None):
        return CharacterTokenizer(path, lowercase)

    def graph(self, path, lowercase=None):
        raise ValueError("the characters type of this test has a host form only")

    def save(self, tokenizer, directory):
        _write(os.path.join(directory, self.file_name), tokenizer.tokens)
        return {"type": self.name, "file": self.file_name, "lowercase": tokenizer.lowercase}

    def train(self, input_files, vocab_size, output, lowercase=False, verbose=False):
        counts = collections.Counter()
        for path in input_files:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            counts.update(c for c in (text.lower() if lowercase else text) if not c.isspace())
        if vocab_size <= len(SPECIAL):
            raise ValueError(f"vocab_size must be more than {len(SPECIAL)}, got {vocab_size}")
        # The most frequent first; ties in code point order, so the file is deterministic.
        kept = sorted(counts, key=lambda c: (-counts[c], c))[:vocab_size - len(SPECIAL)]
        os.makedirs(output, exist_ok=True)
        path = os.path.join(output, self.file_name)
        _write(path, [*SPECIAL, *kept])
        return f"wrote {path} ({len(SPECIAL) + len(kept)} characters)"


def _write(path, tokens):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join([MAGIC, *tokens]) + "\n")


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
    assert line == f"wrote {path} (8 characters)"
    # Lowercased: a 5, b 5, d 2, c 1 -> a, b, d kept beside the five special tokens.
    assert path.read_text(encoding="utf-8").split("\n")[1:-1] == [*SPECIAL, "a", "b", "d"]
    tokenizer = load_tokenizer(str(tmp_path / "out"), host=True)
    assert isinstance(tokenizer, CharacterTokenizer)
    assert tokenizer.encode("dab c") == [7, 5, 6, 1]


def test_the_type_names_come_from_the_registry(characters):
    with pytest.raises(ValueError, match="type must be one of characters, sentencepiece, "
                                         "wordpiece, got 'bpe'"):
        TrainSettings(type="bpe", input=("x",), vocab_size=8, output="o")


def test_a_type_without_a_trainer_is_not_offered(characters, monkeypatch):
    monkeypatch.delattr(CharacterType, "train")
    assert "characters" not in base.trainable_types()
    with pytest.raises(ValueError, match="the characters vocabulary type has no trainer"):
        characters.train(["x"], 8, "o")
