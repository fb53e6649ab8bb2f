"""The programs: `albert-tf COMMAND [FLAGS]`, one module of this package per command.

    albert-tf finetune --task=rte --data_dir=glue/RTE --init_checkpoint=albert_base_v2 \
        --output_dir=runs/rte
    albert-tf predict --model=runs/rte/export --text_a="A man sleeps." --text_b="He rests."

`albert-tf COMMAND` is also `python -m albert_tf.COMMAND` (same flags, same
output: `alias_finder` runs this `main` for it); `albert-tf COMMAND --help`
lists a command's flags. Each module declares its settings and its work as
`PROGRAM` (`program.Program`), which makes its flags when it runs. These
modules are the only ones that wire the task registry (`albert_tf.tasks`) to
the library; `api` offers the same commands as Python functions (also
importable as `albert_tf.api`).

Imports nothing heavy: `import albert_tf` installs the alias finder.
"""

import importlib
import importlib.abc
import importlib.util
import sys

# Command -> the module whose `PROGRAM` runs it.
COMMANDS = {name: f"albert_tf.commands.{name}" for name in (
    "finetune", "pretrain", "create_pretraining_data", "export", "predict", "serve",
    "inspect", "tokenizer", "download", "ablate", "search", "distill")}
# Modules of this package also importable under `albert_tf.NAME`.
PUBLIC_MODULES = ("api",)


def usage():
    names = "\n".join(f"  {name:<24} python -m albert_tf.{name}" for name in COMMANDS)
    return f"usage: albert-tf COMMAND [FLAGS]\n\ncommands:\n{names}\n"


def main(argv=None):
    """The console script: `argv` is `["albert-tf", COMMAND, FLAGS...]`."""
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
    # absl finds a program's own flags (for --helpshort) by the name in argv[0],
    # and prints the main module's docstring as --help's usage: the command's.
    sys.argv = [COMMANDS[name], *argv[2:]]
    launcher = sys.modules.get("__main__")
    if launcher is not None and not getattr(launcher, "__doc__", None):
        launcher.__doc__ = module.__doc__
    module.PROGRAM.start(COMMANDS[name])
    return 0


class _Alias(importlib.abc.Loader):
    """`albert_tf.NAME` as the module `albert_tf.commands.NAME`: imported, the same
    module object; run by `python -m`, a call of `main` for the command."""

    def __init__(self, name):
        self.name = name

    def create_module(self, spec):
        return importlib.import_module(f"albert_tf.commands.{self.name}")

    def exec_module(self, module):
        pass  # imported already, once, under its own name

    def get_code(self, fullname):  # what runpy (python -m) runs
        return compile(f"import sys\nfrom albert_tf.commands import main\n"
                       f"sys.exit(main(['albert-tf', {self.name!r}, *sys.argv[1:]]))",
                       f"<albert-tf {self.name}>", "exec")


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Finds `albert_tf.NAME` for the commands and `PUBLIC_MODULES` (see `_Alias`);
    `albert_tf.export` and `albert_tf.tokenizer` are library packages, whose
    `__main__` runs their command."""

    def find_spec(self, fullname, path=None, target=None):
        package, _, name = fullname.rpartition(".")
        if package != "albert_tf" or (name not in COMMANDS and name not in PUBLIC_MODULES):
            return None
        return importlib.util.spec_from_loader(fullname, _Alias(name))


def install_aliases():
    """Puts the finder of `albert_tf.NAME` after the path finders (so a library
    package of the same name, `albert_tf.export`, is found first)."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.append(_AliasFinder())
