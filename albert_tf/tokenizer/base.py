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
under which names checkpoint folders ship it, how to build both forms of
its tokenizer and, if it can, how to train one (`train`, which
`albert-tf tokenizer train --type=NAME` runs). `albert_tf.load_tokenizer` picks
the type from a checkpoint folder or a vocabulary file. A new vocabulary type is one module
that defines and `register`s its type, named in `TYPE_MODULES`.
"""

import abc
import os

from albert_tf.registry import Registry

TYPE_MODULES = ("albert_tf.tokenizer.sentencepiece.type", "albert_tf.tokenizer.wordpiece.type")
# Hugging Face's tokenizer settings; its `do_lower_case` gives the casing.
TOKENIZER_CONFIG = "tokenizer_config.json"


class VocabularyType(abc.ABC):
    """One kind of vocabulary file and its tokenizers.

    name: recorded in saved model folders (e.g. "sentencepiece").
    file_name: the name a saved model folder ships the file under.
    folder_files: names (relative paths) checkpoint folders ship it under,
        in order of preference.
    description: how errors name the kind of file ("a SentencePiece model (.model)").
    """

    name = None
    file_name = None
    folder_files = ()
    description = None

    @abc.abstractmethod
    def recognizes(self, path):
        """Whether the file `path` is a vocabulary of this type (read from its content)."""

    @abc.abstractmethod
    def host(self, path, lowercase=None):
        """The host tokenizer of the vocabulary file `path`."""

    @abc.abstractmethod
    def graph(self, path, lowercase=None):
        """The in-graph tokenizer (a Keras layer) of the vocabulary file `path`."""

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

    @abc.abstractmethod
    def save(self, tokenizer, directory):
        """Writes the tokenizer's vocabulary into `directory` as `file_name`; returns
        its description (`{"type", "file", "lowercase"}`, what a saved folder records)."""


class VocabularyIds:
    """The vocabulary side of the tokenizer protocol, shared by every tokenizer class:
    special ids and size from `self.vocab` (a vocabulary object with `special_ids`
    and `size`)."""

    pad_id = property(lambda self: self.vocab.special_ids["pad"])
    unk_id = property(lambda self: self.vocab.special_ids["unk"])
    cls_id = property(lambda self: self.vocab.special_ids["cls"])
    sep_id = property(lambda self: self.vocab.special_ids["sep"])
    mask_id = property(lambda self: self.vocab.special_ids["mask"])
    vocabulary_size = property(lambda self: self.vocab.size)

    def checked_id(self, index):
        """`index` as an int; `ValueError` outside the vocabulary."""
        if not 0 <= int(index) < self.vocab.size:
            raise ValueError(f"id {index} is outside the vocabulary [0, {self.vocab.size})")
        return int(index)


REGISTRY = Registry("vocabulary type", TYPE_MODULES)
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
