"""The export command's settings (`python -m albert_tf.export`), declared once.

Its flags are made from `ExportSettings` (`albert_tf.commands.program`), and
a Python caller builds the same settings from keyword arguments; either way
they are validated here, before TensorFlow loads. A task's own export options
(SQuAD v2.0's `null_threshold`, ...) are the task's `export_options_class`,
carried under `task_options` and validated by the task; a format's own
(the web bundle's `web_wasm`) its `options_class`, under `format_options`.
"""

import dataclasses
import os

from albert_tf.export import formats as formats_lib
from albert_tf.export.precision import PRECISIONS
from albert_tf.settings import POSITIVE, Settings, setting


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExportSettings(Settings):
    model_dir: str = setting(help="A fine-tuned model/ folder, or the run's output folder.",
                             roles=("reads",))
    export_dir: str = setting(help="The export root; the version folder goes inside.",
                              roles=("writes",))
    version: int | None = setting(None, help="Version number (default: 1 + the highest "
                                  "existing).", rule=POSITIVE)
    precision: str = setting("auto", help="What the SavedModel computes in: fp32, bf16, or "
                             "auto (bf16 where this machine runs it faster, measured as "
                             "training's --precision=auto; recorded in the export).",
                             choices=PRECISIONS)
    formats: str = setting("", help="What to write beside the SavedModel, a comma-separated "
                           "list of export formats, each NAME or NAME:VARIANT "
                           "(albert_tf.export.formats): " + "; ".join(
                               f"{name}: {formats_lib.get(name).help}"
                               for name in formats_lib.names()) + ".",
                           aliases=("tflite_variants",))
    # The spellings of earlier releases, each an entry of --formats.
    tflite: bool = setting(False, help="Former spelling of --formats=tflite.")
    quantize: bool = setting(False, help="Former spelling of --formats=tflite:dynamic_int8 "
                             "(model_dynamic_int8.tflite).")
    web: bool = setting(False, help="Former spelling of --formats=web.")
    web_variant: str | None = setting(None, help="Former spelling of --formats=web:VARIANT.")
    eval_data: str | None = setting(None, help="The task's data folder (as finetune "
                                    "--data_dir): each variant's metric on --eval_split is "
                                    "recorded beside the float model's.")
    eval_split: str | None = setting(None, help="The labelled split to score (default: the "
                                     "task's first evaluation split).")
    eval_examples: int | None = setting(None, help="Score at most this many examples "
                                        "(default: all).", rule=POSITIVE)
    calibration_split: str | None = setting(None, help="Where the int8 variant's calibration "
                                            "examples come from (default: the task's "
                                            "training split).")
    calibration_examples: int = setting(128, help="How many calibration examples (int8).",
                                        rule=POSITIVE)
    task_options: dict = setting({}, help="The task's export options (its "
                                 "`export_options_class`'s fields), validated by the task.",
                                 flag=False)
    format_options: dict = setting({}, help="The formats' own options (their "
                                   "`options_class`es' fields).", flag=False)

    def __post_init__(self):
        # A Python caller may give the formats as a list.
        if isinstance(self.formats, (list, tuple)):
            object.__setattr__(self, "formats", ",".join(self.formats))
        super().__post_init__()

    def format_entries(self):
        """The `formats.Entry`s to write, each once, in order: `formats` (its former
        spellings read as the current ones), then the entries the former switches
        `quantize` (with or without `tflite`), `tflite`, `web` and `web_variant` add."""
        names = [name.strip() for name in self.formats.split(",") if name.strip()]
        if self.quantize:
            names.append("tflite:dynamic_int8")
        elif self.tflite:
            names.append("tflite")
        if self.web or self.web_variant:
            names.append(f"web:{self.web_variant}" if self.web_variant else "web")
        return formats_lib.chosen(names)

    def format_names(self):
        """The spellings of `format_entries` (`tflite`, `tflite:float16`, `web`, ...)."""
        return tuple(entry.spelling for entry in self.format_entries())

    def checks(self):
        entries = self.format_entries()  # unknown names, shared paths
        formats_lib.options(entries, self.format_options)  # the formats' own options
        calibrated = [entry.spelling for entry in entries if entry.calibrated]
        return ((self.eval_data or not calibrated,
                 f"formats: {calibrated[0]} is calibrated on the task's data: give "
                 "eval_data=the task's data folder" if calibrated else ""),)

    def check_files(self):
        """What the export needs on disk besides the model (cheap: before any work)."""
        if self.eval_data and not os.path.isdir(self.eval_data):
            raise FileNotFoundError(f"--eval_data: no such folder {self.eval_data}")
        for entry in self.format_entries():
            if entry.format.check is not None:
                entry.format.check(self)
