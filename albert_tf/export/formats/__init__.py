"""What an export writes beside its SavedModel: the export formats, one folder each.

A format is a subpackage of this package whose light `__init__` registers a
`Format`: its name, its variants (each a file or folder of the version folder),
how it writes one, where the export's description records it, what it needs
(calibration data, files on disk, options of its own) and how the export's
measurement (`albert_tf.export.comparison`) runs what it wrote. The exporter
(`exporter.write_export`), the settings' checks and the measurement read this
registry, and the registry finds the folders itself, so a new format is one
folder that touches nothing else (`albert_tf.export.formats.tflite`, `web`).

The export's list of formats (`--formats`) spells each entry `NAME` (its
default variant) or `NAME:VARIANT` (`tflite:float16`); the spellings of earlier
releases (`tflite_quantized`, `float16`, ...) are each format's `aliases`. Its
description goes in the export's info under `formats`, at that spelling.
Imports nothing heavy: the settings are checked against it before TensorFlow starts.
"""

import dataclasses
import importlib
import pkgutil
import typing

from albert_tf.registry import Registry


@dataclasses.dataclass(frozen=True)
class Job:
    """What a format is written from.

    module: the float32 serving module (`albert_tf.export.base.ServingModule`).
    options: the format's own options (its `options_class` instance), or None.
    model_dir: the fine-tuned model folder (for files beside the model), or None.
    representative: the calibration inputs (a dict of int32 `(examples,
        max_seq_length)` arrays) of a calibrated variant, or None.
    """

    module: object
    options: object = None
    model_dir: str | None = None
    representative: dict | None = None


@dataclasses.dataclass(frozen=True)
class Format:
    """One thing an export can write beside its SavedModel.

    name: its name in the list of formats.
    help: what it is, for the command's help.
    variants: `{variant: (path, what it stores)}`: the file or folder each
        variant writes, relative to the version folder (two entries of one
        export may not write the same path); the first is the default.
    write: `(job, variant, path) -> description`: writes `path` (absolute) from
        a `Job`; the JSON-able description goes in the export's info.
    runners: `(folder, description) -> {name: runner}`, the numpy runners the
        measurement scores, or None: not measured.
    calibrated: the variants that need the task's calibration examples (the
        export's `eval_data`).
    check: `(settings) -> None`, raising when what it needs on disk is missing
        (called before any work), or None.
    prepare: `(module) -> None`, raising when it cannot be written for this
        serving module (called before any file is written), or None.
    options_class: a `Settings` class of the format's own options (`export`
        flags, `ExportSettings.format_options`), or None.
    aliases: `{former name: "NAME:VARIANT"}`: spellings of earlier releases.
    """

    name: str
    help: str
    variants: dict
    write: typing.Callable
    runners: typing.Callable | None = None
    calibrated: tuple = ()
    check: typing.Callable | None = None
    prepare: typing.Callable | None = None
    options_class: type | None = None
    aliases: dict = dataclasses.field(default_factory=dict)

    @property
    def default_variant(self):
        return next(iter(self.variants))


@dataclasses.dataclass(frozen=True)
class Entry:
    """One entry of an export's list of formats: a format and its variant."""

    format: Format
    variant: str

    @property
    def spelling(self):
        """`NAME`, or `NAME:VARIANT` for a variant other than the default."""
        if self.variant == self.format.default_variant:
            return self.format.name
        return f"{self.format.name}:{self.variant}"

    @property
    def path(self):
        return self.format.variants[self.variant][0]

    @property
    def calibrated(self):
        return self.variant in self.format.calibrated

    def described(self, info):
        """Its description in an export's `info`, or None when it was not written."""
        return info.get("formats", {}).get(self.spelling)

    def record(self, info, description):
        info.setdefault("formats", {})[self.spelling] = description


def _format_modules():
    package = importlib.import_module(__name__)
    return [f"{__name__}.{info.name}" for info in pkgutil.iter_modules(package.__path__)
            if info.ispkg]


REGISTRY = Registry("export format", _format_modules)
register = REGISTRY.register
get = REGISTRY.get
names = REGISTRY.names


def entry(spelling):
    """The `Entry` a list's item spells: `NAME`, `NAME:VARIANT` or a format's alias;
    an unknown name or variant raises a `ValueError` starting `formats:`."""
    spelling = spelling.strip()
    for known in REGISTRY.entries().values():
        if spelling in known.aliases:
            spelling = known.aliases[spelling]
    name, _, variant = spelling.partition(":")
    try:
        found = get(name)
    except ValueError as e:
        raise ValueError(f"formats: {e}") from None
    variant = variant or found.default_variant
    if variant not in found.variants:
        raise ValueError(f"formats: {name} has no variant {variant!r}; its variants: "
                         f"{', '.join(found.variants)}")
    return Entry(found, variant)


def chosen(spellings):
    """The `Entry`s of a list of formats, in order, each once; two entries writing
    one path raise a `ValueError` starting `formats:`."""
    entries, paths = [], {}
    for spelling in spellings:
        item = entry(spelling)
        if item in entries:
            continue
        if item.path in paths:
            raise ValueError(f"formats: {paths[item.path]} and {item.spelling} both write "
                             f"{item.path}; give one")
        paths[item.path] = item.spelling
        entries.append(item)
    return entries


def option_classes():
    """The distinct options classes of the formats (the export command's flags)."""
    found = []
    for known in REGISTRY.entries().values():
        if known.options_class is not None and known.options_class not in found:
            found.append(known.options_class)
    return found


def options(entries, given):
    """`{format name: its validated options}` of the formats of `entries`, from
    `given` (the export's `format_options`, those given: every format's fields
    together); an option of no format on the list is refused, named."""
    classes = {item.format.name: item.format.options_class for item in entries
               if item.format.options_class is not None}
    usable = {name for c in classes.values() for name in c.field_names()}
    unused = sorted(set(given) - usable)
    if unused:
        raise ValueError(f"{', '.join(unused)}: an option of a format that --formats does "
                         "not name")
    return {name: c.from_dict({k: v for k, v in given.items() if k in c.field_names()})
            for name, c in classes.items()}


def runners(folder, info, entries):
    """`{variant name: runner}` of what an export folder holds: the SavedModel
    (named by its compute precision), then what each written entry gives to measure."""
    from albert_tf.export import comparison

    compute = info.get("precision", {}).get("compute", "fp32")
    found = {f"saved_model_{compute}": comparison.saved_model_runner(folder)}
    for item in entries:
        description = item.described(info)
        if item.format.runners is not None and description is not None:
            found.update(item.format.runners(folder, description))
    return found
