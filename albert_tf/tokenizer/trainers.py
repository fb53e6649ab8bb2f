"""`tokenizer train`'s settings and function: the vocabulary type named by `type`
trains with its own trainer (`VocabularyType.train`), looked up in the registry;
and what every trainer does the same: check its arguments (`check_corpus`), read
its corpus (`corpus_lines`) and say what it wrote (`trained_line`).

Imports nothing heavy: the settings are checked before a trainer loads.
"""

import dataclasses
import os

from albert_tf.io_utils import expand_inputs
from albert_tf.settings import Settings, setting
from albert_tf.tokenizer.base import get_type, trainable_types


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainSettings(Settings):
    """The flags of `tokenizer train`; a bad value raises `ValueError` naming the field."""

    type: str = setting("sentencepiece", help="The vocabulary type to train, one of "
                        f"{', '.join(trainable_types())}: ALBERT's SentencePiece model, or a "
                        "BERT WordPiece vocab.txt (as Chinese ALBERT's).")
    input: tuple[str, ...] = setting(help="Comma-separated UTF-8 text files or quoted globs "
                                     "('corpus/*.txt'), one sentence or paragraph a line.",
                                     roles=("reads",))
    vocab_size: int = setting(help="Pieces in the model, special symbols included.")
    output: str = setting(help="sentencepiece: an output path prefix (writes PREFIX.model "
                          "and PREFIX.vocab); wordpiece: an output folder (writes vocab.txt "
                          "and tokenizer_config.json).", roles=("writes",))
    lowercase: bool = setting(False, help="Lowercase the text first (an uncased model; for "
                              "WordPiece also strip accents, BERT's do_lower_case).")
    verbose: bool = setting(False, help="Show the trainer's log.")

    def checks(self):
        # The registry, not a fixed list: a vocabulary type brings its own trainer.
        names = trainable_types()
        return [("type", self.type in names, f"one of {', '.join(names)}")]


def train(settings):
    """Trains the vocabulary `settings` describe with its type's trainer; returns
    the line saying what was written."""
    files = expand_inputs(settings.input)  # globs, as create_pretraining_data takes
    return get_type(settings.type).train(files, settings.vocab_size, settings.output,
                                         lowercase=settings.lowercase,
                                         verbose=settings.verbose)


def check_corpus(input_files, vocab_size, reserved, what):
    """Raises `ValueError` for an empty `input_files` or a `vocab_size` that is not an
    integer above `reserved` (the ids `what` names take), `FileNotFoundError` naming
    a missing input file."""
    if not input_files:
        raise ValueError("input_files is empty: give at least one text file")
    for path in input_files:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"input file not found: {path}")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size <= reserved:
        raise ValueError(f"vocab_size must be an integer > {reserved} ({what}), "
                         f"got {vocab_size!r}")


def corpus_lines(paths, transform):
    """`transform(line)` of each line of each UTF-8 file (undecodable bytes read as
    U+FFFD), where that is not empty: the text a trainer learns from."""
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                text = transform(line)
                if text:
                    yield text


def trained_line(path, vocab, unit, uncased):
    """What `tokenizer train` prints after writing `vocab` (with `size` and
    `special_ids`, of `unit`s, e.g. "pieces") to `path`."""
    return (f"wrote {path} ({vocab.size} {unit}, special ids {vocab.special_ids}, "
            f"{'uncased' if uncased else 'cased'})")
