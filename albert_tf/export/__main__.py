# `python -m albert_tf.export`: the `albert-tf export` command (albert_tf.commands.export).
import sys

from albert_tf.commands import main

sys.exit(main(["albert-tf", "export", *sys.argv[1:]]))
