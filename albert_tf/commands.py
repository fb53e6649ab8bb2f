"""`albert-tf COMMAND [FLAGS]`: every command of the toolkit behind one console script.

    albert-tf finetune --task=rte --data_dir=glue/RTE --init_checkpoint=albert_base_v2 \
        --output_dir=runs/rte
    albert-tf predict --model=runs/rte/export --text_a="A man sleeps." --text_b="He rests."

`albert-tf COMMAND` is `python -m albert_tf.COMMAND` (same flags, same output);
`albert-tf COMMAND --help` lists a command's flags.
"""

import importlib
import sys

from absl import app

# Command -> the module whose `main(argv)` runs it.
COMMANDS = {
    "finetune": "albert_tf.finetune",
    "pretrain": "albert_tf.pretrain",
    "create_pretraining_data": "albert_tf.create_pretraining_data",
    "export": "albert_tf.export.__main__",
    "predict": "albert_tf.predict",
    "serve": "albert_tf.serve",
    "inspect": "albert_tf.inspect",
    "tokenizer": "albert_tf.tokenizer.__main__",
    "download": "albert_tf.download",
    "ablate": "albert_tf.ablate",
    "search": "albert_tf.search",
    "distill": "albert_tf.distill",
}


def usage():
    names = "\n".join(f"  {name:<24} python -m {module.removesuffix('.__main__')}"
                      for name, module in COMMANDS.items())
    return f"usage: albert-tf COMMAND [FLAGS]\n\ncommands:\n{names}\n"


def main(argv=None):
    argv = list(sys.argv if argv is None else argv)
    if len(argv) < 2 or argv[1] in ("-h", "--help", "help"):
        sys.stdout.write(usage())
        return 0 if len(argv) >= 2 else 2
    name = argv[1].replace("-", "_")
    if name not in COMMANDS:
        sys.stderr.write(f"albert-tf: error: unknown command {argv[1]!r}; commands: "
                         f"{', '.join(COMMANDS)}\n")
        return 2
    module = importlib.import_module(COMMANDS[name])
    # absl finds a program's own flags (for --helpshort) by the name in argv[0].
    sys.argv = [COMMANDS[name], *argv[2:]]
    app.run(module.main)
    return 0


if __name__ == "__main__":
    sys.exit(main())
