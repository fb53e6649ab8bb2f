"""The export command's settings (`python -m albert_tf.export`), declared once.

Its flags are made from `ExportSettings` (`albert_tf.commands.program`), and
a Python caller builds the same settings from keyword arguments; either way
they are validated here, before TensorFlow loads. A task's own export options
(SQuAD v2.0's `null_threshold`, ...) are the task's `export_options_class`,
carried under `task_options` and validated by the task.
"""

import dataclasses
import os

from albert_tf.export import formats as formats_lib
from albert_tf.export import web as web_lib
from albert_tf.export.precision import PRECISIONS
from albert_tf.settings import POSITIVE, Settings, setting


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
                           "list of export formats (albert_tf.export.formats): " + "; ".join(
                               f"{name}: {formats_lib.get(name).help}"
                               for name in formats_lib.names()) + ".",
                           aliases=("tflite_variants",))
    tflite: bool = setting(False, help="Also write model.tflite (token ids in): adds tflite "
                           "to --formats.")
    quantize: bool = setting(False, help="model.tflite with dynamic-range int8 weights "
                             "(implies --tflite): adds tflite_quantized to --formats.")
    web: bool = setting(False, help="Also write web/ (see --formats): adds web to --formats.")
    web_variant: str = setting(web_lib.DEFAULT_VARIANT, help="The TFLite variant of web/: "
                               "float32, float16 or dynamic_int8.", choices=web_lib.VARIANTS)
    web_wasm: str = setting(web_lib.DEFAULT_WASM_BUILD, help="LiteRT.js WebAssembly of web/: "
                            "auto (both builds; each browser loads one: relaxed_simd where it "
                            "has relaxed SIMD, else compat), relaxed_simd (Chromium-based "
                            "browsers; the fastest) or compat (every browser; 9.3 MB less "
                            "than auto, about 3x slower where relaxed SIMD exists).",
                            choices=web_lib.WASM_CHOICES)
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

    def __post_init__(self):
        # A Python caller may give the formats as a list.
        if isinstance(self.formats, (list, tuple)):
            object.__setattr__(self, "formats", ",".join(self.formats))
        super().__post_init__()

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
        entries = formats_lib.chosen(self.format_names())  # unknown names, shared paths
        calibrated = [entry.name for entry in entries if entry.calibrated]
        return ((self.eval_data or not calibrated,
                 f"formats: {calibrated[0]} is calibrated on the task's data: give "
                 "eval_data=the task's data folder" if calibrated else ""),)

    def check_files(self):
        """What the export needs on disk besides the model (cheap: before any work)."""
        if self.eval_data and not os.path.isdir(self.eval_data):
            raise FileNotFoundError(f"eval_data: no such folder {self.eval_data}")
        for entry in formats_lib.chosen(self.format_names()):
            if entry.check is not None:
                entry.check(self)
