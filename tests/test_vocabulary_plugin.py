"""A new vocabulary type is one module: this file defines one (a character vocabulary:
its host tokenizer, its in-graph one, its trainer, its word rule for pretraining and
its web tokenizer, `web_characters.js` beside this file), registers it, and trains,
pretrains, fine-tunes, exports for the web and serves with it, touching nothing in
albert_tf/. The shared base supplies the rest: the tokenizer's ids and lookups
(`HostBase`, `StringLayer`), building it and saving its file (`VocabularyType`), and
the trainer's checks and corpus reading (`trainers`)."""

import collections
import hashlib
import json
import os
import pathlib
import shutil
import subprocess

import pytest

from albert_tf import load_tokenizer
from albert_tf.tokenizer import base
from albert_tf.tokenizer.host_base import HostBase
from albert_tf.tokenizer.web import special_ids
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

    def id_of(self, piece):
        return self.ids.get(piece, self.special_ids["unk"])

    def longest_spelling(self):
        return 1

    def resolve_lowercase(self, lowercase):
        return bool(lowercase)

    def file_bytes(self):
        return "\n".join([MAGIC, *self.tokens, ""]).encode("utf-8")

    def fingerprint(self, lowercase):
        return hashlib.sha256(self.file_bytes() + bytes([bool(lowercase)])).hexdigest()[:16]


class CharacterTokenizer(HostBase):
    """Host form: one id per character but whitespace, [UNK] for the others; each
    token spans its one character."""

    vocabulary_type = "characters"
    vocabulary_class = CharacterVocab

    def __init__(self, path, lowercase=None):
        self.load_vocabulary(path, lowercase)

    def encode(self, text):
        return self._offsets(text if isinstance(text, str) else text.decode())[0]

    def _offsets(self, text):
        text = text.lower() if self.lowercase else text
        kept = [i for i, c in enumerate(text) if not c.isspace()]
        return [self.vocab.id_of(text[i]) for i in kept], kept, [i + 1 for i in kept]


def character_layer():
    """The in-graph form, a Keras layer of TensorFlow ops (made when first needed: this
    module imports TensorFlow only then)."""
    import tensorflow as tf

    from albert_tf.tokenizer.graph_layer import StringLayer

    class CharacterLayer(StringLayer):
        vocabulary_type = "characters"
        vocabulary_class = CharacterVocab
        standalone_words = False  # (the text cuts: no character is a word by itself)
        max_word_chars = None

        def __init__(self, path, lowercase=None, **kwargs):
            super().__init__(**kwargs)
            self.load_vocabulary(path, lowercase)
            self.table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
                self.vocab.tokens, list(range(self.vocab.size)), value_dtype=tf.int32),
                default_value=self.unk_id)

        def _tokenize_with_offsets(self, strings):
            codes = tf.strings.unicode_decode(strings, "UTF-8", errors="replace")
            position = tf.ragged.range(tf.cast(codes.row_lengths(), tf.int32))
            chars = tf.strings.unicode_encode(codes[..., None], "UTF-8")
            # Python's str.isspace: RE2's \s is ASCII only.
            kept = ~tf.strings.regex_full_match(chars, r"[\s\p{Z}\x{1c}-\x{1f}\x{85}]")
            ids = tf.ragged.map_flat_values(self.table.lookup, chars)
            starts = tf.ragged.boolean_mask(position, kept)
            return tf.ragged.boolean_mask(ids, kept), starts, starts + 1

        def _tokenize(self, strings):
            return self._tokenize_with_offsets(strings)[0]

    return CharacterLayer


class CharacterType(base.VocabularyType):
    name = "characters"
    file_name = "chars.txt"
    folder_files = ("chars.txt",)
    description = "a character list (chars.txt)"
    host_form = CharacterTokenizer
    web_tokenizer = pathlib.Path(__file__).with_name("web") / "web_characters.js"

    @property
    def graph_form(self):
        return character_layer()

    def web_tables(self, tokenizer):
        return {"special": special_ids(tokenizer), "lowercase": tokenizer.lowercase,
                "whitespace": [cp for cp in range(0x3001) if chr(cp).isspace()]}

    def continues_word(self, piece):
        return False  # every character is a word of its own (Chinese text is)

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


def test_the_base_saves_the_vocabulary_and_refuses_a_missing_form(characters, tmp_path,
                                                                 monkeypatch):
    (tmp_path / "chars.txt").write_bytes(CharacterVocab([*SPECIAL, "x", "y"]).file_bytes())
    tokenizer = load_tokenizer(str(tmp_path), host=True)
    (tmp_path / "saved").mkdir()
    record = base.save_vocabulary(tokenizer, str(tmp_path / "saved"))
    assert record == {"type": "characters", "file": "chars.txt", "lowercase": False}
    again = load_tokenizer(str(tmp_path / "saved"), host=True)
    assert again.encode("y x z") == [6, 5, 1]
    monkeypatch.setattr(CharacterType, "graph_form", None)
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


TEXTS = ["abba cab", "  Bad\tdab  ", "", "zzz \u3000 a", "ab\u2028ba"]


def _vocabulary(folder):
    """The folder of a character vocabulary (its file alone would read as a WordPiece
    vocab.txt: any UTF-8 text does; a folder is read by the names types ship under)."""
    folder.mkdir(exist_ok=True)
    (folder / "chars.txt").write_bytes(CharacterVocab([*SPECIAL, *"abcdBD"]).file_bytes())
    return str(folder)


def test_its_in_graph_form_web_form_and_word_rule_are_the_types(characters, tmp_path):
    import tensorflow as tf

    from albert_tf.export.formats.web import bundle
    from albert_tf.pretraining.masking import VocabularyTables

    path = _vocabulary(tmp_path / "vocab")
    host, layer = load_tokenizer(path, host=True), load_tokenizer(path)
    ids, starts, ends = layer.tokenize_with_offsets(tf.constant(TEXTS))
    for i, text in enumerate(TEXTS):  # the in-graph form gives the host form's ids and spans
        assert (ids[i].numpy().tolist(), starts[i].numpy().tolist(),
                ends[i].numpy().tolist()) == tuple(host.encode_with_offsets(text))
    # Pretraining counts words by the type's rule: here every character is one.
    tables = VocabularyTables.from_tokenizer(host)
    assert not tables.continues_word.any() and tables.special[:5].tolist() == [
        True, False, True, True, True]
    # The web bundle's tokenizer is the type's own, on the tables the type gives.
    if shutil.which("node") is None or not bundle.node_modules().is_dir():
        pytest.skip("node or node_modules (make web-deps) is missing")
    folder = tmp_path / "bundle"
    name = bundle.write_tokenizer(folder, host)
    assert (folder / "tokenizer.js").read_bytes() == CharacterType.web_tokenizer.read_bytes()
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"text": t, "ids": e[0], "offsets": list(
        map(list, zip(e[1], e[2])))}) + "\n" for t, e in (
            (t, host.encode_with_offsets(t)) for t in TEXTS)), encoding="utf-8")
    checked = subprocess.run(["node", str(pathlib.Path(__file__).with_name("web")
                                          / "check_tokenizers.mjs"), str(folder), str(cases),
                              name], capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["failed"] == 0


@pytest.mark.slow  # pretraining, fine-tuning, a web export and a server (~1 min)
def test_it_pretrains_finetunes_exports_for_the_web_and_serves(characters, tmp_path):
    import cli_helpers as cli
    from albert_tf import tasks
    from albert_tf.export.settings import ExportSettings
    from albert_tf.pretraining.options import DataOptions
    from albert_tf.pretraining.pipeline import create_pretraining_data
    from albert_tf.pretraining.train_settings import PretrainSettings
    from albert_tf.pretraining.trainer import run_pretraining
    from albert_tf.tasks.finetuned import run_export
    from albert_tf.training.finetuning import run
    from albert_tf.training.settings import FinetuneSettings
    from serve_helpers import Server
    from test_task_plugin import PLUGINS, SENTENCES, write_data

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join(" ".join(SENTENCES[i:] + SENTENCES[:i]) for i in range(8)),
                      encoding="utf-8")
    train(TrainSettings(type="characters", input=(str(corpus),), vocab_size=40,
                        output=str(tmp_path / "vocab")))
    vocab = str(tmp_path / "vocab")  # (the folder: see `_vocabulary`)
    create_pretraining_data([str(corpus)], load_tokenizer(vocab, host=True),
                            str(tmp_path / "data" / "train"), DataOptions(
                                max_seq_length=32, max_predictions_per_seq=5, dupe_factor=2,
                                input_format="prose"))
    model = cli.tiny_model(str(tmp_path))
    pretrained = run_pretraining(PretrainSettings(
        input_files=str(tmp_path / "data" / "train-*"), vocab_file=vocab, model=model,
        output_dir=str(tmp_path / "pretrain"), max_seq_length=32, max_predictions_per_seq=5,
        batch_size=4, train_steps=4, warmup_steps=1, precision="fp32", strategy="one_device"))
    assert pretrained["train"]["step"] == 4
    with tasks.task_path(PLUGINS):
        task = tasks.get("toy_question")
        run(task, FinetuneSettings(
            task=task.name, output_dir=str(tmp_path / "run"), data_dir=write_data(
                tmp_path / "toy"), init_checkpoint=str(tmp_path / "pretrain" / "model"),
            strategy="one_device", precision="fp32", batch_size=4, train_steps=4,
            warmup_steps=1, max_seq_length=32, learning_rate=1e-3), verbose=False)
        formats = "web" if shutil.which("node") else ""
        version = run_export(ExportSettings(
            model_dir=str(tmp_path / "run"), export_dir=str(tmp_path / "export"),
            precision="fp32", formats=formats))["export_dir"]
    if formats:
        web = pathlib.Path(version) / "web"
        assert (web / "tokenizer.js").read_bytes() == CharacterType.web_tokenizer.read_bytes()
        assert (web / "chars.txt").read_text(encoding="utf-8").startswith(MAGIC)
    # The SavedModel holds the type's graph form: it serves where the type is unknown.
    server = Server(str(tmp_path / "export"), name="chars")
    try:
        status, answer = server.predict({"instances": [{"sentence": "Is it late?"}]})
    finally:
        server.stop()
    assert status == 200, answer
    assert set(answer["predictions"][0]) == {"is_question", "probability"}
