"""Trains a vocabulary: ALBERT's SentencePiece model (the default) or a BERT WordPiece one.

    python -m albert_tf.tokenizer train --input=FILE[,FILE...] --vocab_size=N \
        --output=PREFIX [--lowercase]
    python -m albert_tf.tokenizer train --type=wordpiece --input=FILE[,FILE...] \
        --vocab_size=N --output=DIR [--lowercase]

`--type` is a registered vocabulary type (`albert_tf.tokenizer.base`) that
has a trainer (`VocabularyType.train`; the command is `trainers.train`).
SentencePiece writes PREFIX.model and PREFIX.vocab (settings: `training.ALBERT_TRAINER_OPTIONS`); each input line
goes through ALBERT's `preprocess_text` first. WordPiece writes DIR/vocab.txt ([PAD], [UNK], [CLS],
[SEP], [MASK] first) and DIR/tokenizer_config.json (its casing), learnt from
the words of BERT's `BasicTokenizer` (`wordpiece.training`); `--vocab_file=DIR`
(or `albert_tf.load_tokenizer(DIR)`) reads it back.
"""

import os

from albert_tf.commands.program import Flags, Program
from albert_tf.tokenizer.trainers import TrainSettings, train

COMMANDS = ("train",)


def check_command(arguments):
    """The positional arguments: one command of `COMMANDS`."""
    if len(arguments) > 1 and arguments[0] in COMMANDS and \
            all(os.path.isfile(a) for a in arguments[1:]):
        raise ValueError(f"expected one command, got {arguments[0]!r} and the files "
                         f"{arguments[1:3]}...: the shell expanded an unquoted glob; quote it "
                         "(--input='corpus/*.txt')")
    if len(arguments) != 1 or arguments[0] not in COMMANDS:
        raise ValueError(f"expected one command, one of {list(COMMANDS)}; got {arguments}")


def run(settings):
    print(train(settings))


PROGRAM = Program("tokenizer", run, Flags(TrainSettings), quiet=False, arguments=check_command)
