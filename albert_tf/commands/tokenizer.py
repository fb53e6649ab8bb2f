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

from absl import flags

from albert_tf.commands import cli
from albert_tf.tokenizer.trainers import TrainSettings, train

FLAGS = flags.FLAGS
COMMANDS = ("train",)
cli.define_flags(TrainSettings)


def _check_command(argv):
    if len(argv) > 2 and argv[1] in COMMANDS and all(os.path.isfile(a) for a in argv[2:]):
        raise ValueError(f"expected one command, got {argv[1]!r} and the files "
                         f"{argv[2:4]}...: the shell expanded an unquoted glob; quote it "
                         "(--input='corpus/*.txt')")
    if len(argv) != 2 or argv[1] not in COMMANDS:
        raise ValueError(f"expected one command, one of {list(COMMANDS)}; got {argv[1:]}")


def main(argv):
    with cli.user_errors():
        _check_command(argv)
        cli.check_arguments(argv[:1], FLAGS, required=("input", "vocab_size", "output"))
        print(train(cli.settings_from_flags(TrainSettings, FLAGS)))
