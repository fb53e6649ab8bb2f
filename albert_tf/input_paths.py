"""Every file and folder a command reads, checked before TensorFlow loads.

A settings field declared with the role "reads" (`albert_tf.settings.setting`)
names a file or folder the command reads: a vocabulary, a data folder, a
checkpoint, a task's own files. `check` tells, in one line naming the flag and
the path, which of them does not exist, so that a mistyped path costs a second,
not the twenty it takes TensorFlow to load and the run to reach it.

Accepted besides an existing path: a published checkpoint name
(`albert_base_v2`, `hf:...`), a TensorFlow checkpoint prefix (`PREFIX.index`
exists), comma-separated globs (each must match something), and "-" (stdin).
"""

import glob
import os

from albert_tf.published import is_published_name


def missing(value):
    """The parts of `value` (a path, or comma-separated paths or globs) that
    name nothing; [] when all exist."""
    if value in (None, "", "-") or not isinstance(value, (str, list, tuple)):
        return []
    parts = value.split(",") if isinstance(value, str) else value
    absent = []
    for part in (p.strip() for p in parts):
        if not part or is_published_name(part) or os.path.exists(os.path.expanduser(part)):
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
