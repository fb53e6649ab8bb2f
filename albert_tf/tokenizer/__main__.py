"""Trains a vocabulary: ALBERT's SentencePiece model (the default) or a BERT WordPiece one.

    python -m albert_tf.tokenizer train --input=FILE[,FILE...] --vocab_size=N \
        --output=PREFIX [--lowercase]
    python -m albert_tf.tokenizer train --type=wordpiece --input=FILE[,FILE...] \
        --vocab_size=N --output=DIR [--lowercase]

SentencePiece writes PREFIX.model and PREFIX.vocab (settings:
`training.ALBERT_TRAINER_OPTIONS`); each input line goes through ALBERT's
`preprocess_text` first. WordPiece writes DIR/vocab.txt ([PAD], [UNK], [CLS],
[SEP], [MASK] first) and DIR/tokenizer_config.json (its casing), learnt from
the words of BERT's `BasicTokenizer` (`wordpiece_training`); `--vocab_file=DIR`
(or `albert_tf.load_tokenizer(DIR)`) reads it back.
"""

import os
import sys

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_enum("type", "sentencepiece", ["sentencepiece", "wordpiece"],
                  "The vocabulary to train: ALBERT's SentencePiece model, or a BERT WordPiece "
                  "vocab.txt (as Chinese ALBERT's).")
flags.DEFINE_list("input", None,
                  "Comma-separated UTF-8 text files or quoted globs ('corpus/*.txt'), one "
                  "sentence or paragraph a line.")
flags.DEFINE_integer("vocab_size", None, "Pieces in the model, special symbols included.")
flags.DEFINE_string("output", None, "sentencepiece: an output path prefix (writes PREFIX.model "
                    "and PREFIX.vocab); wordpiece: an output folder (writes vocab.txt and "
                    "tokenizer_config.json).")
flags.DEFINE_boolean("lowercase", False, "Lowercase the text first (an uncased model; for "
                     "WordPiece also strip accents, BERT's do_lower_case).")
flags.DEFINE_boolean("verbose", False, "Show the trainer's log.")

COMMANDS = ("train",)


def _fail(message):
    sys.exit(f"albert_tf.tokenizer: error: {message}")


def train_sentencepiece():
    from albert_tf.tokenizer.sentencepiece.training import train_sentencepiece
    from albert_tf.tokenizer.sentencepiece.vocab import SpmVocab

    path = train_sentencepiece(FLAGS.input, FLAGS.vocab_size, FLAGS.output,
                               lowercase=FLAGS.lowercase, verbose=FLAGS.verbose)
    vocab = SpmVocab(path)
    return (f"wrote {path} ({vocab.size} pieces, special ids {vocab.special_ids}, "
            f"{'uncased' if vocab.casing().uncased else 'cased'})")


def train_wordpiece():
    from albert_tf.tokenizer.wordpiece.host import HostWordPieceTokenizer
    from albert_tf.tokenizer.wordpiece.training import train_wordpiece

    path = train_wordpiece(FLAGS.input, FLAGS.vocab_size, FLAGS.output,
                           lowercase=FLAGS.lowercase, verbose=FLAGS.verbose)
    tok = HostWordPieceTokenizer(path, lowercase=FLAGS.lowercase)
    return (f"wrote {path} ({tok.vocabulary_size} tokens, special ids {tok.vocab.special_ids}, "
            f"{'uncased' if tok.lowercase else 'cased'})")


TRAINERS = {"sentencepiece": train_sentencepiece, "wordpiece": train_wordpiece}


def main(argv):
    if len(argv) > 2 and argv[1] in COMMANDS and all(os.path.isfile(a) for a in argv[2:]):
        _fail(f"expected one command, got {argv[1]!r} and the files {argv[2:4]}...: the shell "
              "expanded an unquoted glob; quote it (--input='corpus/*.txt')")
    if len(argv) != 2 or argv[1] not in COMMANDS:
        _fail(f"expected one command, one of {list(COMMANDS)}; got {argv[1:]}")
    missing = [f"--{name}" for name in ("input", "vocab_size", "output")
               if FLAGS[name].value is None]
    if missing:
        _fail(f"missing required flag(s): {', '.join(missing)}")
    try:
        from albert_tf.io_utils import expand_inputs

        FLAGS.input = expand_inputs(FLAGS.input)  # globs, as create_pretraining_data takes
        print(TRAINERS[FLAGS.type]())
    except (OSError, ValueError) as e:
        _fail(str(e))


if __name__ == "__main__":
    app.run(main)
