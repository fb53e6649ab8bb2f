"""Trains an ALBERT SentencePiece model.

    python -m albert_tf.tokenizer train --input=FILE[,FILE...] --vocab_size=N \
        --output=PREFIX [--lowercase]

Writes PREFIX.model and PREFIX.vocab (settings: `training.ALBERT_TRAINER_OPTIONS`);
each input line goes through ALBERT's `preprocess_text` first.
"""

import sys

from absl import app, flags

from albert_tf.tokenizer.training import train_sentencepiece
from albert_tf.tokenizer.vocab import SpmVocab

FLAGS = flags.FLAGS
flags.DEFINE_list("input", None,
                  "Comma-separated UTF-8 text files, one sentence or paragraph a line.")
flags.DEFINE_integer("vocab_size", None, "Pieces in the model, special symbols included.")
flags.DEFINE_string("output", None, "Output path prefix: writes PREFIX.model and PREFIX.vocab.")
flags.DEFINE_boolean("lowercase", False, "Lowercase the text first (an uncased model).")
flags.DEFINE_boolean("verbose", False, "Show SentencePiece's training log.")

COMMANDS = ("train",)


def _fail(message):
    sys.exit(f"albert_tf.tokenizer: error: {message}")


def main(argv):
    if len(argv) != 2 or argv[1] not in COMMANDS:
        _fail(f"expected one command, one of {list(COMMANDS)}; got {argv[1:]}")
    missing = [f"--{name}" for name in ("input", "vocab_size", "output")
               if FLAGS[name].value is None]
    if missing:
        _fail(f"missing required flag(s): {', '.join(missing)}")
    try:
        path = train_sentencepiece(FLAGS.input, FLAGS.vocab_size, FLAGS.output,
                                   lowercase=FLAGS.lowercase, verbose=FLAGS.verbose)
        vocab = SpmVocab(path)
    except (OSError, ValueError) as e:
        _fail(str(e))
    print(f"wrote {path} ({vocab.size} pieces, special ids {vocab.special_ids}, "
          f"{'uncased' if vocab.casing().uncased else 'cased'})")


if __name__ == "__main__":
    app.run(main)
