"""What an export writes beside its SavedModel: one registry of formats.

A format is one entry (`Format`): its name in the export's list of formats
(`ExportSettings.formats`, `--formats`), the file or folder it writes into the
version folder, how it writes it, where the export's description records it,
what it needs (the task's calibration data, files on disk) and how the
export's measurement (`albert_tf.export.comparison`) runs what it wrote. The
exporter (`exporter.write_export`), the settings' checks and the measuring
all read this registry, so a new format is one `register(Format(...))`:

    register(Format("onnx", "model.onnx (token ids in)", "model.onnx", write_onnx))

Built in: `tflite` (model.tflite, float32) and `tflite_quantized` (model.tflite,
dynamic-range int8: the original `--tflite` and `--quantize`); one entry per
TFLite variant, `model_<variant>.tflite` (`TFLITE_VARIANTS`); `web` (the
browser bundle, `web.py`). Imports nothing heavy: the settings are checked
against it before TensorFlow starts.
"""

import dataclasses
import os
import typing

from albert_tf.export import TFLITE_FILE
from albert_tf.registry import Registry

# The TFLite conversions (`albert_tf.export.tflite`), each what it stores.
_TFLITE_HELP = {"float32": "no reduction",
                "float16": "float16 weights, dequantized when loaded",
                "dynamic_int8": "int8 weights, float activations",
                "int8": "full-integer: int8 weights and activations, calibrated on "
                        "--eval_data's --calibration_split"}
TFLITE_VARIANTS = tuple(_TFLITE_HELP)


@dataclasses.dataclass(frozen=True)
class Job:
    """What a format is written from.

    module: the float32 serving module (`albert_tf.export.base.ServingModule`).
    settings: the export's `ExportSettings` (format options such as
        `web_variant`), or None: their defaults.
    model_dir: the fine-tuned model folder (for files beside the model), or None.
    representative: the calibration inputs (a dict of int32 `(examples,
        max_seq_length)` arrays) of a format with `calibrated=True`, or None.
    """

    module: object
    settings: object = None
    model_dir: str | None = None
    representative: dict | None = None

    def option(self, name, default):
        """The export setting `name`, or `default` without settings."""
        return default if self.settings is None else getattr(self.settings, name)


@dataclasses.dataclass(frozen=True)
class Format:
    """One thing an export can write beside its SavedModel.

    name: its name in the list of formats.
    help: what it is, for the command's help.
    path: the file or folder it writes, relative to the version folder (two
        formats of one export may not write the same path).
    write: `(job, path) -> description`: writes `path` (absolute) from a `Job`;
        the JSON-able description is stored in the export's info at `info_key`.
    info_key: where the description goes: `("tflite",)`, or `("tflite_variants",
        "float16")` (a key inside a dict); default: `(name,)`.
    runners: `(folder, description) -> {variant name: runner}`, the numpy
        runners the measurement scores (`albert_tf.export.comparison`), or None:
        not measured.
    calibrated: whether it needs the task's calibration examples (the export's
        `eval_data`).
    check: `(settings) -> None`, raising when what it needs on disk is missing
        (called before any work), or None.
    prepare: `(module) -> None`, raising when it cannot be written for this
        serving module (called before any file is written), or None.
    """

    name: str
    help: str
    path: str
    write: typing.Callable
    info_key: tuple = ()
    runners: typing.Callable | None = None
    calibrated: bool = False
    check: typing.Callable | None = None
    prepare: typing.Callable | None = None

    def __post_init__(self):
        if not self.info_key:
            object.__setattr__(self, "info_key", (self.name,))

    def described(self, info):
        """Its description in an export's `info`, or None when it was not written."""
        value = info
        for key in self.info_key:
            if not isinstance(value, dict) or key not in value:
                return None
            value = value[key]
        return value

    def record(self, info, description):
        """Stores `description` in `info` at `info_key`."""
        *parents, last = self.info_key
        for key in parents:
            info = info.setdefault(key, {})
        info[last] = description


REGISTRY = Registry("export format", (__name__,))
register = REGISTRY.register
get = REGISTRY.get
names = REGISTRY.names


def chosen(format_names):
    """The `Format`s of `format_names`, in order; an unknown name, or two formats
    writing one path, raise a `ValueError` starting `formats:`."""
    entries, paths = [], {}
    for name in format_names:
        try:
            entry = get(name)
        except ValueError as e:
            raise ValueError(f"formats: {e}") from None
        if entry.path in paths:
            raise ValueError(f"formats: {paths[entry.path]} and {name} both write "
                             f"{entry.path}; give one")
        paths[entry.path] = name
        entries.append(entry)
    return entries


def runners(folder, info, entries):
    """`{variant name: runner}` of what an export folder holds: the SavedModel
    (named by its compute precision), then what each written format of
    `entries` gives to measure."""
    from albert_tf.export import comparison

    compute = info.get("precision", {}).get("compute", "fp32")
    found = {f"saved_model_{compute}": comparison.saved_model_runner(folder)}
    for entry in entries:
        description = entry.described(info)
        if entry.runners is not None and description is not None:
            found.update(entry.runners(folder, description))
    return found


# --- The built-in formats ----------------------------------------------------

def _tflite_writer(variant):
    def write(job, path):
        from albert_tf.export import tflite

        return tflite.write(job.module, path, variant, job.representative)
    return write


def _tflite_runners(folder, description):
    from albert_tf.export import comparison

    return {f"tflite_{description['variant']}":
            comparison.tflite_runner(os.path.join(folder, description["file"]))}


def tflite_variant_file(variant):
    """The file name of one TFLite variant (`model_int8.tflite`, ...)."""
    return f"model_{variant}.tflite"


register(Format("tflite", "model.tflite, the encoded signature at max_seq_length (token ids "
                "in), float32", TFLITE_FILE, _tflite_writer("float32"),
                runners=_tflite_runners))
register(Format("tflite_quantized", "model.tflite with dynamic-range int8 weights",
                TFLITE_FILE, _tflite_writer("dynamic_int8"), info_key=("tflite",),
                runners=_tflite_runners))
for _variant in TFLITE_VARIANTS:
    register(Format(_variant, f"{tflite_variant_file(_variant)}, {_TFLITE_HELP[_variant]}",
                    tflite_variant_file(_variant), _tflite_writer(_variant),
                    info_key=("tflite_variants", _variant), runners=_tflite_runners,
                    calibrated=_variant == "int8"))


def _write_web(job, path):
    from albert_tf.tokenizer.loading import load_tokenizer
    from albert_tf.export import web

    host = load_tokenizer(job.model_dir, host=True)
    return web.write(job.module, host, path, job.option("web_variant", web.DEFAULT_VARIANT),
                     wasm_build=job.option("web_wasm", web.DEFAULT_WASM_BUILD))


def _check_web(settings):
    from albert_tf.export import web

    web.check_runtime()


def _prepare_web(module):
    from albert_tf.export import web

    web.head_settings(module)


register(Format("web", "web/, a static page and albert.js that tokenize and predict in the "
                "browser on LiteRT.js (the TFLite model of --web_variant)", "web", _write_web,
                check=_check_web, prepare=_prepare_web))
