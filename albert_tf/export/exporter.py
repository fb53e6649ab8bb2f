"""Exporting a fine-tuned `model/` folder as a versioned SavedModel (and its formats).

`<export_dir>/<version>/` is the layout TF Serving watches: it serves the
highest numeric version and ignores other names, such as the temporary folder
an export is built in (renamed into place only once complete).
"""

import contextlib
import errno
import fcntl
import json
import os
import shutil
import tempfile

import tensorflow as tf

from albert_tf.checkpoints import native
from albert_tf.export import INFO_FILE  # noqa: F401 (read here by callers)
from albert_tf.errors import RunStopped
from albert_tf.export import formats as formats_lib
from albert_tf.io_utils import atomic_file, folder_lock, place_new, share_tree
from albert_tf.training.run_folder import MODEL_DIR


def resolve_model_dir(path):
    """The fine-tuned `model/` folder: `path` itself, or `path/model` (a run's output)."""
    for candidate in (path, os.path.join(path, MODEL_DIR)):
        if native.is_native_dir(candidate):
            return candidate
    raise FileNotFoundError(f"{path}: not a fine-tuned model folder (no {native.CONFIG_FILE} "
                            f"in it or in {os.path.join(path, MODEL_DIR)})")


def versions(export_dir):
    """The numeric version folders of `export_dir`, ascending (ints)."""
    if not os.path.isdir(export_dir):
        return []
    # ASCII digits only: str.isdigit also takes "²", which int() refuses.
    return sorted(int(name) for name in os.listdir(export_dir)
                  if name.isascii() and name.isdigit()
                  and os.path.isdir(os.path.join(export_dir, name)))


def next_version(export_dir):
    """1 + the highest existing version (1 for a new folder)."""
    existing = versions(export_dir)
    return existing[-1] + 1 if existing else 1


def check_version(export_dir, version=None):
    """The version folder to write: `version` (a positive int, not taken yet) or the next."""
    version = next_version(export_dir) if version is None else version
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"version must be a positive integer, got {version!r}")
    target = os.path.join(export_dir, str(version))
    if os.path.exists(target):
        raise FileExistsError(f"{target} already exists; choose another --version")
    return version, target


def save_module(module, info, path):
    """Writes the SavedModel of `module` (and its description) into folder `path`."""
    tf.saved_model.save(module, path, signatures=module.signatures())
    write_info(info, path)


def write_info(info, path):
    """Writes the export description `info` into the export folder `path`."""
    os.makedirs(os.path.dirname(os.path.join(path, INFO_FILE)), exist_ok=True)
    with atomic_file(os.path.join(path, INFO_FILE), encoding="utf-8") as f:
        json.dump(info, f, indent=2, sort_keys=True)


def write_export(module, info, target, formats=(), *, format_options=None, saved_module=None,
                 model_dir=None, representative=None, evaluate=None, renumber=False):
    """Writes the SavedModel of a serving module into the version folder `target`.

    formats: the list of what to write beside it (`albert_tf.export.formats`:
    `tflite`, `tflite:float16`, `web`, ...), each written from `module` and
    described in `info["formats"]`. format_options: the formats' own options
    given (`ExportSettings.format_options`; None: their defaults);
    model_dir: the fine-tuned folder (files beside the model, e.g. the web
    bundle's tokenizer); representative: the calibration inputs of the
    calibrated formats (`int8`).
    saved_module: the module the SavedModel is saved from, when it is not
    `module` (a copy that computes in another precision; `info["precision"]`
    says which); the formats are always written from `module`, in float32.
    evaluate: a function ({variant name: runner}) -> JSON-able, called once
    every file is written, with runners of the SavedModel and of each measured
    format read back from the folder (`formats.runners`); its result is
    stored as `info["evaluation"]`.
    The folder appears complete or not at all: it is built beside its final
    place and renamed at the end, readable by other users (the umask's modes).
    Concurrent exports into one root never replace each other: the check that
    the version is free and the rename are one step under a lock of the root;
    if `target`'s version was taken meanwhile, `renumber` (a version chosen as
    "the next") takes the next free one, else it is a `FileExistsError`.

    Returns:
        the version folder written.
    """
    entries = formats_lib.chosen(formats)
    options = formats_lib.options(entries, format_options or {})
    for entry in entries:  # what cannot be written, refused before any file is
        if entry.format.prepare is not None:
            entry.format.prepare(module)
    root = os.path.dirname(os.path.abspath(target))
    os.makedirs(root, exist_ok=True)
    remove_stale_folders(root)
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(target)}{TMP_MARK}", dir=root)
    try:
        with _held(tmp), _disk_full_named(tmp, target, module):
            _write_files(module, info, tmp, entries, options, (model_dir, representative),
                         saved_module, evaluate)
        share_tree(tmp)
        with folder_lock(root):
            if renumber and os.path.lexists(target):
                info["version"] = next_version(root)
                target = os.path.join(root, str(info["version"]))
                write_info(info, tmp)
                share_tree(tmp)
            if os.path.lexists(target):
                raise FileExistsError(f"{target} was written by another export meanwhile; "
                                      "choose another --version")
            place_new(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


TMP_MARK = ".tmp-"  # `.<version>.tmp-XXXX`: a version folder being written


class ExportWriteFailed(RunStopped):
    """The disk filled up while an export was written (nothing was placed)."""


@contextlib.contextmanager
def _held(folder):
    """An `flock` on `folder` while it is written: a temporary folder whose lock
    can be taken belongs to an exporter that is gone (`remove_stale_folders`)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def remove_stale_folders(root):
    """Removes the `.N.tmp-*` folders under `root` that no live exporter holds
    (those a killed export left); returns their names."""
    removed = []
    for name in sorted(os.listdir(root)):
        folder = os.path.join(root, name)
        if not (name.startswith(".") and TMP_MARK in name and os.path.isdir(folder)):
            continue
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # an export in progress
        finally:
            os.close(fd)
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(name)
    return removed


@contextlib.contextmanager
def _disk_full_named(tmp, target, module):
    """A full disk (or quota) while writing `tmp` becomes one `ExportWriteFailed`
    line naming the version folder and the space it needs."""
    try:
        yield
    except (tf.errors.ResourceExhaustedError, OSError) as e:
        if isinstance(e, OSError) and e.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        if isinstance(e, tf.errors.ResourceExhaustedError) and "space" not in str(e).lower():
            raise
        written = sum(os.path.getsize(os.path.join(d, f))
                      for d, _, files in os.walk(tmp) for f in files)
        weights = sum(v.numpy().nbytes for v in getattr(module, "variables", ()))
        needed = max(written, weights) / 2**20
        free = shutil.disk_usage(os.path.dirname(tmp)).free / 2**20
        raise ExportWriteFailed(
            f"{target}: no space left for the export (it needs about "
            f"{needed:.1f} MiB free, {free:.1f} MiB are); nothing was written, free some "
            "space and run the same command again") from None


def _write_files(module, info, tmp, entries, options, sources, saved_module, evaluate):
    """Every file of the export, into the folder `tmp`; `sources`: the model folder and
    the calibration inputs."""
    model_dir, representative = sources
    for entry in entries:
        job = formats_lib.Job(module, options.get(entry.format.name), model_dir,
                              representative if entry.calibrated else None)
        entry.record(info, entry.format.write(job, entry.variant, os.path.join(tmp, entry.path)))
    save_module(saved_module or module, info, tmp)
    if evaluate is not None:
        info["evaluation"] = evaluate(formats_lib.runners(tmp, info, entries))
        write_info(info, tmp)
