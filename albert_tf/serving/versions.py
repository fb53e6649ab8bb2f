"""The versions of an export root, and one version loaded for serving.

An export root holds numeric version folders (`<export_dir>/<version>/`, each
written whole by `albert_tf.export.exporter`, so a folder with a
`saved_model.pb` is complete). The server serves the highest one and, as TF
Serving does, loads a newer one when it appears.
"""

import logging
import os

from google.protobuf import json_format

log = logging.getLogger("albert_tf.serve")

SAVED_MODEL = "saved_model.pb"
# SavedModel's own entry in the signature map, not a signature a client calls.
INIT_OP = "__saved_model_init_op"
DEFAULT = "serving_default"
# The export's description (`albert_tf.export.INFO_FILE`; the server reads it
# without depending on the export package).
INFO_FILE = os.path.join("assets.extra", "albert_tf_export.json")


_SKIPPED = set()  # names already logged as not versions


def is_version(name):
    """A version folder's name: ASCII digits only (`str.isdigit` also takes "²",
    which `int` refuses)."""
    return name.isascii() and name.isdigit()


def versions(root):
    """`{version: folder}` of the complete numeric version folders under `root`;
    any other folder not hidden is logged once by name and skipped."""
    if not os.path.isdir(root):
        return {}
    found = {}
    for n in os.listdir(root):
        folder = os.path.join(root, n)
        if is_version(n):
            if os.path.isfile(os.path.join(folder, SAVED_MODEL)):
                found[int(n)] = folder
        elif not n.startswith(".") and os.path.isdir(folder) and folder not in _SKIPPED:
            _SKIPPED.add(folder)
            log.warning("%s: not a version folder (versions are named by ASCII digits); "
                        "skipped", folder)
    return found


def resolve(path):
    """`(root, fixed)`: the folder to watch, or a version folder served alone.

    `fixed` is `(version, folder)` when `path` is itself a SavedModel (its
    folder name is the version when numeric, else 1), else None.
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"--model: no such folder {path}")
    if os.path.isfile(os.path.join(path, SAVED_MODEL)):
        name = os.path.basename(os.path.normpath(path))
        return path, (int(name) if is_version(name) else 1, path)
    if not versions(path):
        raise ValueError(f"--model: {path} holds no SavedModel and no numeric version folder "
                         f"with a {SAVED_MODEL} (the --export_dir of `albert-tf export`)")
    return path, None


def newest(root, fixed=None):
    """`(version, folder)` to serve: `fixed`, else the highest version under `root`
    (None when there is none)."""
    if fixed is not None:
        return fixed
    found = versions(root)
    return (max(found), found[max(found)]) if found else None


class Signature:
    """One signature of a loaded version: its function, input and output specs
    `{name: (dtype, shape)}` (shape with None for any size), and whether
    requests may be concatenated into one batch: every input and output has
    a leading batch dimension and fixed sizes beyond it, so that rows of
    different requests line up."""

    def __init__(self, function, definition):
        import tensorflow as tf

        def specs(tensors):
            return {name: (tf.dtypes.as_dtype(info.dtype),
                           None if info.tensor_shape.unknown_rank else
                           tuple(None if d.size < 0 else d.size for d in info.tensor_shape.dim))
                    for name, info in tensors.items()}

        self.function = function
        # input name -> the data column it was trained from (`albert_tf_export.json`'s
        # "columns"), which a request may name instead.
        self.columns = {}
        # The export's `text_windows()` ("windows" in its description): how many
        # sequences a long text becomes (None: one per text).
        self.windows = None
        self.inputs, self.outputs = specs(definition.inputs), specs(definition.outputs)
        self.batchable = all(shape and shape[0] is None and None not in shape[1:]
                             for _, shape in (*self.inputs.values(), *self.outputs.values()))

    def warm_up(self):
        """One call on a row of empty strings or zeros, so that the first request does
        not pay for the function's first run (seconds; TF Serving's warm-up requests)."""
        import numpy as np
        import tensorflow as tf

        def zeros(dtype, shape):
            shape = [1 if d is None else d for d in shape or (1,)]
            if dtype == tf.string:
                return tf.constant(np.full(shape, b"", dtype=object), tf.string)
            return tf.zeros(shape, dtype)

        tensors = {name: zeros(dtype, shape) for name, (dtype, shape) in self.inputs.items()}
        try:
            self.function(**tensors)
        except tf.errors.OpError:  # a signature that refuses zeros still served as it is
            pass


class LoadedVersion:
    """A SavedModel version loaded with TensorFlow: `signatures` (name ->
    `Signature`) and `metadata`, TF Serving's `GetModelMetadata` answer body."""

    def __init__(self, version, folder, name):
        import tensorflow as tf
        import tensorflow_text  # noqa: F401 - registers the SentencePiece and WordPiece ops
        from tensorflow.core.protobuf import saved_model_pb2

        self.version, self.folder = version, folder
        saved = saved_model_pb2.SavedModel()
        with open(os.path.join(folder, SAVED_MODEL), "rb") as f:
            saved.ParseFromString(f.read())
        definitions = saved.meta_graphs[0].signature_def
        for key in [k for k in definitions if k == INIT_OP]:
            del definitions[key]
        self._loaded = tf.saved_model.load(folder)
        self.signatures = {name: Signature(self._loaded.signatures[name], definition)
                           for name, definition in definitions.items()}
        for signature in self.signatures.values():
            signature.warm_up()
        if DEFAULT in self.signatures:
            info = _info(folder)
            self.signatures[DEFAULT].columns = _columns(info)
            self.signatures[DEFAULT].windows = _windows(info)
        # TF Serving's SignatureDefMap, written as its REST API writes protos.
        self.metadata = {
            "model_spec": {"name": name, "signature_name": "", "version": str(version)},
            "metadata": {"signature_def": {"signature_def": {
                key: json_format.MessageToDict(definition, preserving_proto_field_name=True,
                                               always_print_fields_with_no_presence=True)
                for key, definition in definitions.items()}}},
        }


def _info(folder):
    """The export's description (a dict; {} for a SavedModel without one)."""
    import json

    try:
        with open(os.path.join(folder, INFO_FILE), encoding="utf-8") as f:
            info = json.load(f)
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def _columns(info):
    """The export's `columns` (input -> the data column it was trained from)."""
    columns = info.get("columns")
    if not isinstance(columns, dict):
        return {}
    return {k: v for k, v in columns.items() if isinstance(k, str) and isinstance(v, str)}


def _windows(info):
    """The export's `windows` when well formed, else None."""
    windows = info.get("windows")
    numbers = ("room", "step", "max_tokens")
    if not (isinstance(windows, dict) and isinstance(windows.get("inputs"), list)
            and all(isinstance(windows.get(k), int) and windows[k] > 0 for k in numbers)):
        return None
    return windows
