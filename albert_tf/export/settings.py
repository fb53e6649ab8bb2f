"""The export command's settings (`python -m albert_tf.export`), declared once.

Its flags are made from `ExportSettings` (`albert_tf.cli.define_flags`), and
a Python caller builds the same settings from keyword arguments; either way
they are validated here, before TensorFlow loads. A task's own export options
(SQuAD v2.0's `null_threshold`, ...) are the task's `export_options_class`,
carried under `task_options` and validated by the task.
"""

import dataclasses
import os

from albert_tf.export import web as web_lib
from albert_tf.export.precision import PRECISIONS
from albert_tf.settings import POSITIVE, Settings, setting

# What an export may hold besides the SavedModel (see `format_names`).
FORMATS = ("tflite", "tflite_quantized", "float32", "float16", "dynamic_int8", "int8", "web")
# The formats that each write model.tflite.
PRIMARY_TFLITE = ("tflite", "tflite_quantized")
CALIBRATED = ("int8",)  # formats calibrated on the task's data (eval_data)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExportSettings(Settings):
    model_dir: str = setting(help="A fine-tuned model/ folder, or the run's output folder.")
    export_dir: str = setting(help="The export root; the version folder goes inside.")
    version: int | None = setting(None, help="Version number (default: 1 + the highest "
                                  "existing).", rule=POSITIVE)
    precision: str = setting("auto", help="What the SavedModel computes in: fp32, bf16, or "
                             "auto (bf16 where this machine runs it faster, measured as "
                             "training's --precision=auto; recorded in the export).",
                             choices=PRECISIONS)
    formats: str = setting("", help="What to write beside the SavedModel, a comma-separated "
                           "list: tflite (model.tflite, token ids in), tflite_quantized "
                           "(model.tflite with dynamic-range int8 weights); float32, float16, "
                           "dynamic_int8, int8 (model_<variant>.tflite; int8 is full-integer, "
                           "calibrated on --eval_data's --calibration_split); web (web/: the "
                           "page, albert.js, the tokenizer, the TFLite model of --web_variant "
                           "and the LiteRT.js runtime, served as static files).")
    tflite: bool = setting(False, help="Also write model.tflite (token ids in): adds tflite "
                           "to --formats.")
    quantize: bool = setting(False, help="model.tflite with dynamic-range int8 weights "
                             "(implies --tflite): adds tflite_quantized to --formats.")
    web: bool = setting(False, help="Also write web/ (see --formats): adds web to --formats.")
    web_variant: str = setting(web_lib.DEFAULT_VARIANT, help="The TFLite variant of web/: "
                               "float32, float16 or dynamic_int8.", choices=web_lib.VARIANTS)
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

    def format_names(self):
        """The formats to write, each once, in order: `formats`, then what the
        switches `tflite`, `quantize` (which implies tflite) and `web` add."""
        names = [name.strip() for name in self.formats.split(",") if name.strip()]
        if self.quantize:
            names.append("tflite_quantized")
        elif self.tflite:
            names.append("tflite")
        if self.web:
            names.append("web")
        return tuple(dict.fromkeys(names))

    def checks(self):
        names = self.format_names()
        unknown = [name for name in names if name not in FORMATS]
        return ((not unknown, f"formats: unknown format {unknown[0]!r}; choose from "
                 f"{', '.join(FORMATS)}" if unknown else ""),
                (not set(PRIMARY_TFLITE) <= set(names),
                 f"formats: {' and '.join(PRIMARY_TFLITE)} both write model.tflite; give one"),
                (self.eval_data or not set(CALIBRATED) & set(names),
                 "formats: int8 (full-integer) calibrates on the task's data: give "
                 "eval_data=the task's data folder"))

    def check_files(self):
        """What the export needs on disk besides the model (cheap: before any work)."""
        if self.eval_data and not os.path.isdir(self.eval_data):
            raise FileNotFoundError(f"eval_data: no such folder {self.eval_data}")
        if "web" in self.format_names():
            web_lib.check_runtime()
