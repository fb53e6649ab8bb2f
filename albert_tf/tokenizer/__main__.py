# `python -m albert_tf.tokenizer`: the `albert-tf tokenizer` command (albert_tf.commands.tokenizer).
import sys

from albert_tf.commands import main

sys.exit(main(["albert-tf", "tokenizer", *sys.argv[1:]]))
