# `python -m albert_tf COMMAND [FLAGS]`: the `albert-tf` console script (albert_tf.commands).
import sys

from albert_tf.commands import main

sys.exit(main([sys.argv[0], *sys.argv[1:]]))
