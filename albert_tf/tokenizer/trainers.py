"""`tokenizer train`'s settings and function: the vocabulary type named by `type`
trains with its own trainer (`VocabularyType.train`), looked up in the registry.

Imports nothing heavy: the settings are checked before a trainer loads.
"""

import dataclasses

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
                                     "('corpus/*.txt'), one sentence or paragraph a line.")
    vocab_size: int = setting(help="Pieces in the model, special symbols included.")
    output: str = setting(help="sentencepiece: an output path prefix (writes PREFIX.model "
                          "and PREFIX.vocab); wordpiece: an output folder (writes vocab.txt "
                          "and tokenizer_config.json).")
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
