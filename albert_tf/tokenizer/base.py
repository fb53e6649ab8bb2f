"""The tokenizer plug point: what a vocabulary type supplies, and their registry.

A tokenizer comes in two forms that give identical ids and offsets:

- on the host (featurization, pretraining data): `encode(text)`,
  `encode_batch(texts)`, `encode_with_offsets(text)` -> `(ids, starts, ends)`;
- in the graph (a Keras layer for `tf.data` and SavedModels): called on a
  string tensor `(batch_size,)` it gives int32 ragged ids, and
  `tokenize_with_offsets(strings)` the ids with code point offsets.

Both give ids without special tokens and have `pad_id`, `unk_id`, `cls_id`,
`sep_id`, `mask_id`, `vocabulary_size`, `lowercase`, `id_to_piece`,
`piece_to_id` and `vocabulary_type` (the name of their `VocabularyType`);
the host form also `fingerprint()`, a short hash of its vocabulary and casing.

A `VocabularyType` knows one kind of vocabulary file: how to recognise it,
under which names checkpoint folders ship it, which classes are the two forms
of its tokenizer (`host_form`, `graph_form`) and, if it can, how to train one
(`train`, which `albert-tf tokenizer train --type=NAME` runs).
`albert_tf.load_tokenizer` picks the type from a checkpoint folder or a
vocabulary file. Everything else that depends on the kind of vocabulary asks
the type: pretraining's word rule (`continues_word`), the web export's
tokenizer (`web_tokenizer`, `web_tables`, `web_vocabulary`). A new vocabulary
type is one subpackage of this package whose `type` module defines and
`register`s its type (found by `type_modules`), or a type `register`ed by a
program of its own.

What the two forms of every type share is written once: `VocabularyIds`
(the vocabulary side), `host_base.HostBase` (the host form) and
`graph_layer.StringLayer` (the in-graph form); `trainers` holds what every
trainer does with its corpus.
"""

import abc
import hashlib
import importlib
import os
import pkgutil

from albert_tf.registry import Registry

# Hugging Face's tokenizer settings; its `do_lower_case` gives the casing.
TOKENIZER_CONFIG = "tokenizer_config.json"


class VocabularyType(abc.ABC):
    """One kind of vocabulary file and its tokenizers.

    name: recorded in saved model folders (e.g. "sentencepiece").
    file_name: the name a saved model folder ships the file under.
    folder_files: names (relative paths) checkpoint folders ship it under,
        in order of preference.
    description: how errors name the kind of file ("a SentencePiece model (.model)").
    host_form, graph_form: the host tokenizer class and the in-graph one (a Keras
        layer), each built as `cls(path, lowercase)`: the class, or its
        "module:Class" name, imported on first use (so that listing the types
        loads neither TensorFlow nor a tokenizer library); None where the type
        has no such form.
    """

    name = None
    file_name = None
    folder_files = ()
    description = None
    host_form = None
    graph_form = None

    @abc.abstractmethod
    def recognizes(self, path):
        """Whether the file `path` is a vocabulary of this type (read from its content)."""

    def host(self, path, lowercase=None):
        """The host tokenizer of the vocabulary file `path`."""
        return self._form("host", self.host_form)(path, lowercase)

    def graph(self, path, lowercase=None):
        """The in-graph tokenizer (a Keras layer) of the vocabulary file `path`."""
        return self._form("in-graph", self.graph_form)(path, lowercase)

    def _form(self, kind, form):
        if form is None:
            raise ValueError(f"the {self.name} vocabulary type has no {kind} tokenizer")
        if isinstance(form, str):
            module, _, name = form.partition(":")
            return getattr(importlib.import_module(module), name)
        return form

    def find_in_folder(self, folder):
        """The first of `folder_files` present in `folder`, or None."""
        for name in self.folder_files:
            if os.path.isfile(os.path.join(folder, name)):
                return os.path.join(folder, name)
        return None

    def train(self, input_files, vocab_size, output, lowercase=False, verbose=False):
        """Trains a vocabulary of this type on the text files `input_files` and
        writes it to `output` (a path prefix or a folder, as the type says);
        returns the line `tokenizer train` prints (what was written). A type
        that cannot train keeps this default."""
        raise ValueError(f"the {self.name} vocabulary type has no trainer")

    @property
    def trainable(self):
        """Whether this type overrides `train`."""
        return type(self).train is not VocabularyType.train

    # The browser's tokenizer (the web export): a JavaScript module exporting
    # `load(tables, vocabularyBytes)` (see `albert_tf.tokenizer.web`), or None;
    # and the function making the tables it reads, of a host tokenizer
    # ("module:function", imported on first use), or None.
    web_tokenizer = None
    web_tables_form = None

    def web_tables(self, tokenizer):
        """The JSON-able tables `web_tokenizer` reads, of a host tokenizer."""
        return self._form("web", self.web_tables_form)(tokenizer)

    def web_vocabulary(self, tokenizer):
        """`(file name, bytes)`: the vocabulary file the bundle ships beside its tables."""
        return self.file_name, tokenizer.vocab.file_bytes()

    def continues_word(self, piece):
        """Whether `piece` continues the word of the piece before it (pretraining's
        whole-word and n-gram masking count words by it: `pretraining.masking`);
        by default every piece starts a word of its own."""
        return False

    def word_marks(self, tokenizer, segment):
        """For whole-word masking: `ids -> bool array`, which tokens of a sentence
        continue a word of `segment` (a word segmenter: text -> words); None where
        the type's own word rule (`continues_word`) already gives the words, or
        where its vocabulary is of no language that needs a segmenter (the default)."""
        return None

    def device_vocabulary(self, tokenizer):
        """`(kind, file name, bytes)`: the tokenizer a phone runtime (MediaPipe, the
        TFLite Task Library) runs from a model's metadata, made to give `tokenizer`'s
        ids: kind "sentencepiece" (a SentencePiece model) or "bert" (a WordPiece
        vocab.txt); a type without one keeps this default."""
        raise ValueError(f"the {self.name} vocabulary type has no phone tokenizer")

    def save(self, tokenizer, directory):
        """Writes the tokenizer's vocabulary into `directory` as `file_name`; returns
        its description (`{"type", "file", "lowercase"}`, what a saved folder records).

        The bytes come from the tokenizer's vocabulary (`tokenizer.vocab.file_bytes()`),
        not from a file: a tokenizer may have been built from bytes or a token list."""
        with open(os.path.join(directory, self.file_name), "wb") as f:
            f.write(tokenizer.vocab.file_bytes())
        return {"type": self.name, "file": self.file_name, "lowercase": bool(tokenizer.lowercase)}


class VocabularyIds:
    """The vocabulary side of the tokenizer protocol, shared by every tokenizer class:
    all from `self.vocab`, which `load_vocabulary` reads with the class's
    `vocabulary_class`. A vocabulary object has `special_ids` (`{"pad", "unk",
    "cls", "sep", "mask"}` -> id), `size`, `piece(index)`, `id_of(piece)`
    (`unk` for a string that is not a piece), `longest_spelling()` (the most
    characters one piece spells, its word mark not counted, at least 1),
    `resolve_lowercase(lowercase)` (the casing to use), `file_bytes()` (what
    a saved folder holds) and `fingerprint(lowercase)`.
    """

    vocabulary_class = None

    pad_id = property(lambda self: self.vocab.special_ids["pad"])
    unk_id = property(lambda self: self.vocab.special_ids["unk"])
    cls_id = property(lambda self: self.vocab.special_ids["cls"])
    sep_id = property(lambda self: self.vocab.special_ids["sep"])
    mask_id = property(lambda self: self.vocab.special_ids["mask"])
    vocabulary_size = property(lambda self: self.vocab.size)

    def load_vocabulary(self, source, lowercase):
        """Sets `vocab` (the vocabulary of `source`, a file or what the class reads)
        and `lowercase` (None: detected from it; a contradiction raises `ValueError`)."""
        self.vocab = self.vocabulary_class(source)
        self.lowercase = self.vocab.resolve_lowercase(lowercase)

    @property
    def max_token_chars(self):
        """The most characters one piece spells (its word mark not counted), at least 1."""
        return self.vocab.longest_spelling()

    def id_to_piece(self, index):
        return self.vocab.piece(self.checked_id(index))

    def piece_to_id(self, piece):
        """The piece's id; `unk_id` for a string that is not a piece."""
        return self.vocab.id_of(piece)

    def checked_id(self, index):
        """`index` as an int; `ValueError` outside the vocabulary."""
        if not 0 <= int(index) < self.vocab.size:
            raise ValueError(f"id {index} is outside the vocabulary [0, {self.vocab.size})")
        return int(index)


def fingerprint(data, lowercase):
    """A short hash of a vocabulary's bytes `data` and the casing (the host
    tokenizers' `fingerprint()`, a cache key of featurized data)."""
    return hashlib.sha256(data + bytes([bool(lowercase)])).hexdigest()[:16]


def type_modules():
    """The `type` module of every subpackage of `albert_tf.tokenizer`: each subpackage
    is one vocabulary type, whose `type` module registers it (found, not listed)."""
    package = importlib.import_module("albert_tf.tokenizer")
    return [f"{package.__name__}.{info.name}.type" for info in pkgutil.iter_modules(
        package.__path__) if info.ispkg]


REGISTRY = Registry("vocabulary type", type_modules)
register = REGISTRY.register
get_type = REGISTRY.get


def vocabulary_types():
    """The registered types, by name (their modules imported on first use)."""
    return REGISTRY.entries()


def trainable_types():
    """The names of the registered types that can train a vocabulary."""
    return sorted(name for name, t in vocabulary_types().items() if t.trainable)


def vocabulary_file_names():
    """Every file name a checkpoint folder may ship a vocabulary under (for downloads)."""
    return [name for t in vocabulary_types().values() for name in t.folder_files]


def save_vocabulary(tokenizer, directory):
    """Writes `tokenizer`'s vocabulary into `directory`; returns the record that
    `loading.load_tokenizer` reads back from the folder's config."""
    return get_type(tokenizer.vocabulary_type).save(tokenizer, directory)
