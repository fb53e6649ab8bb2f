"""Every file and folder a command reads, checked before TensorFlow loads.

A settings field declared with the role "reads" (`albert_tf.settings.setting`)
names a file or folder the command reads: a vocabulary, a data folder, a
checkpoint, a task's own files. `check` tells, in one line naming the flag and
the path, which of them does not exist, so that a mistyped path costs a second,
not the twenty it takes TensorFlow to load and the run to reach it.

Accepted besides an existing path: a model preset (`albert_tiny`), a published
checkpoint name (`albert_base_v2`, `hf:...`), a TensorFlow checkpoint prefix
(`PREFIX.index` exists), comma-separated globs (each must match something), and
"-" (stdin).
"""

import contextlib
import glob
import os

from albert_tf.config import preset_names
from albert_tf.published import is_published_name


def missing(value):
    """The parts of `value` (a path, or comma-separated paths or globs) that
    name nothing; [] when all exist."""
    if value == "-":
        return []
    absent = []
    for part in _parts(value):
        if is_published_name(part) or part in preset_names() \
                or os.path.exists(os.path.expanduser(part)):
            continue
        if os.path.exists(part + ".index") or glob.glob(os.path.expanduser(part)):
            continue
        absent.append(part)
    return absent


def check(values, names):
    """Raises FileNotFoundError for the first of `names` whose value in
    `values` (flag name -> value) names no file or folder."""
    for name in names:
        absent = missing(values.get(name))
        if absent:
            folder = os.path.dirname(os.path.abspath(absent[0]))
            where = "" if os.path.isdir(folder) else f" (no folder {folder})"
            raise FileNotFoundError(f"--{name}: {absent[0]}: no such file or folder{where}")


@contextlib.contextmanager
def naming_flags(values, names):
    """Names the flag in an OSError or ValueError raised inside whose message
    quotes the path one of `names` gave (flag name -> value in `values`) but not
    the flag: `--vocab_file: random.bin: not a vocabulary file ...`, whichever
    module found the file wanting."""
    try:
        yield
    except (OSError, ValueError) as e:
        named = _with_flag(e, values, names)
        if named is None:
            raise
        raise named from e


def _with_flag(error, values, names):
    """`error` with `--NAME: ` before its message, or None: no path of `names` in
    it, a flag named at its start already, or the path given to more than one
    flag. Of paths inside one another (`--export_dir=out --eval_data=out/data`),
    the longest quoted is the one the error is about."""
    message = str(error)
    if message.startswith("--"):
        return None
    # An OSError's file: the path or a folder above it (a file where a folder goes).
    filename = getattr(error, "filename", None)
    filename = os.path.abspath(filename) if isinstance(filename, str) and filename else None
    quoted = {}
    for name in dict.fromkeys(names):
        for part in _parts(values.get(name)):
            if _quotes(message, filename, part):
                quoted[name] = max(quoted.get(name, 0), len(part))
    longest = max(quoted.values(), default=0)
    about = [name for name, length in quoted.items() if length == longest]
    if len(about) != 1 or f"--{about[0]}" in message:
        return None
    text = f"--{about[0]}: {message}"
    try:
        return type(error)(text)
    except Exception:  # noqa: BLE001 - an error class with its own arguments
        return (OSError if isinstance(error, OSError) else ValueError)(text)


def _parts(value):
    parts = value.split(",") if isinstance(value, str) else \
        value if isinstance(value, (list, tuple)) else ()
    return [p.strip() for p in parts if isinstance(p, str) and p.strip()]


def _quotes(message, filename, part):
    """Whether an error (its `message`, its OSError `filename`) is about `part`."""
    full = os.path.abspath(os.path.expanduser(part))
    return part in message or full in message or filename is not None and (
        full == filename or full.startswith(filename.rstrip(os.sep) + os.sep))
