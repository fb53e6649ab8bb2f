"""The export's settings: validated before any work, each error naming its field; a
task's own export options declared by the task, and an export format, each defined in
this file alone and exported with through `tasks.finetuned.run_export`."""

import dataclasses
import os

import pytest

import cli_helpers as cli
import export_helpers as helpers
from albert_tf import tasks
from albert_tf.export import formats
from albert_tf.export.settings import ExportSettings
from albert_tf.settings import POSITIVE_REAL, Settings, setting
from albert_tf.tasks import finetuned
from albert_tf.tasks.base import Declared
from albert_tf.tasks.long_inputs import LongInputOptions
from albert_tf.tasks.sentence_prediction.task import SentenceTask
from albert_tf.tasks.squad.options import SquadExportOptions
from albert_tf.tasks.text_classification.options import TextExportOptions


def _settings(**changes):
    return ExportSettings(model_dir="m", export_dir="e", **changes)


@pytest.mark.parametrize("changes, message", [
    ({"formats": "float16,int4"}, "formats: unknown export format 'int4'; known export "
                                  "formats: mediapipe, mediapipe_embedder, task_library_qa, "
                                  "tflite, web"),
    ({"formats": "tflite:int4"}, "formats: tflite has no variant 'int4'; its variants: "
                                 "float32, float16, dynamic_int8, int8"),
    ({"formats": "web,web:float16"}, "formats: web and web:float16 both write web; give one"),
    ({"formats": "tflite:int8"}, "formats: tflite:int8 is calibrated on the task's data: "
                                 "give eval_data=the task's data folder"),
    ({"precision": "fp16"}, "precision must be one of auto, fp32, bf16, got 'fp16'"),
    ({"web_variant": "int8"}, "formats: web has no variant 'int8'; its variants: "
                              "dynamic_int8, float16, float32"),
    ({"format_options": {"web_wasm": "compat"}}, "web_wasm: an option of a format that "
                                                 "--formats does not name"),
    ({"version": 0}, "version must be >= 1, got 0"),
    ({"eval_examples": 0}, "eval_examples must be >= 1, got 0"),
    ({"calibration_examples": -3}, "calibration_examples must be >= 1, got -3"),
])
def test_bad_settings_are_refused_naming_the_field(changes, message):
    with pytest.raises(ValueError) as error:
        _settings(**changes)
    assert str(error.value) == message


def test_each_format_has_one_spelling_and_the_former_ones_are_read_as_it():
    assert _settings().format_names() == ()
    assert _settings(formats="tflite:float32").format_names() == ("tflite",)  # the default
    assert _settings(tflite=True).format_names() == ("tflite",)
    assert _settings(tflite=True, quantize=True).format_names() == ("tflite:dynamic_int8",)
    assert _settings(formats="float16, web,tflite:float16", web=True, quantize=True
                     ).format_names() == ("tflite:float16", "web", "tflite:dynamic_int8")
    assert _settings(formats="tflite_quantized,float32,int8", eval_data="d").format_names() == (
        "tflite:dynamic_int8", "tflite", "tflite:int8")
    assert _settings(web_variant="float16").format_names() == ("web:float16",)


def test_missing_files_are_named_before_any_work(tmp_path, monkeypatch):
    from albert_tf.export.formats.web import bundle as web

    with pytest.raises(FileNotFoundError, match=f"--eval_data: no such folder {tmp_path}/none"):
        _settings(eval_data=str(tmp_path / "none")).check_files()
    monkeypatch.setattr(web, "node_modules", lambda: tmp_path)  # no runtime installed there
    _settings(formats="tflite:float16").check_files()
    with pytest.raises(FileNotFoundError, match="make web-deps"):
        _settings(formats="web").check_files()


def test_tasks_declare_their_export_options():
    classes = tasks.export_option_classes()
    assert SquadExportOptions in classes and TextExportOptions in classes
    assert tasks.get("squad_v2").export_options({"null_threshold": 0.5}).null_threshold == 0.5
    assert tasks.get("squad_v2").export_options({}).null_threshold is None
    assert tasks.get("sst2").export_options({"null_threshold": None}) is None  # not given
    with pytest.raises(ValueError, match="task 'squad' takes no export option.s. null_threshold"):
        tasks.get("squad").export_options({"null_threshold": 0.5})
    with pytest.raises(ValueError, match=r"threshold must be in \(0, 1\), got 1.0"):
        tasks.get("text_classification").export_options({"threshold": 1.0})


@dataclasses.dataclass(frozen=True, kw_only=True)
class TemperatureOptions(Settings):
    """A toy export option: recorded in the export's description."""

    temperature: float | None = setting(None, "toy_sst2: the export's temperature.",
                                        rule=POSITIVE_REAL)


class ToySst2(SentenceTask):
    """SST-2 under another name, whose export takes an option of its own."""

    def __init__(self):
        sst2 = tasks.get("sst2")
        super().__init__(Declared("toy_sst2", __name__, LongInputOptions, TemperatureOptions,
                                  recipes=sst2.recipe), sst2.spec)

    def serving_module(self, model, tokenizer, settings, model_dir, export_options):
        module, info = super().serving_module(model, tokenizer, settings, model_dir, None)
        return module, {**info, "temperature": export_options.temperature}


@pytest.fixture
def toy_task():
    task = tasks.register(ToySst2())
    yield task
    tasks.REGISTRY.unregister(task.name)


def test_a_task_defined_here_takes_its_export_option_through_run_export(tmp_path, toy_task):
    assert TemperatureOptions in tasks.export_option_classes()
    model_dir, *_ = helpers.finetuned_dir(tmp_path / "run", "toy_sst2")
    with pytest.raises(ValueError, match="temperature must be > 0, got -1.0"):
        finetuned.run_export(ExportSettings(model_dir=model_dir, export_dir=str(tmp_path / "x"),
                                            task_options={"temperature": -1.0}))
    with pytest.raises(ValueError, match="task 'toy_sst2' takes no export option.s. threshold"
                                         "; it takes temperature"):
        finetuned.run_export(ExportSettings(model_dir=model_dir, export_dir=str(tmp_path / "x"),
                                            task_options={"threshold": 0.5}))
    assert not os.path.exists(tmp_path / "x")  # refused before anything was written
    result = finetuned.run_export(ExportSettings(
        model_dir=model_dir, export_dir=str(tmp_path / "export"), precision="fp32",
        task_options={"temperature": 2.5}))
    assert result == {"export_dir": str(tmp_path / "export" / "1"), "evaluation": None}
    info = helpers.export_info(result["export_dir"])
    assert info["task"] == "toy_sst2" and info["temperature"] == 2.5
    assert info["precision"]["compute"] == "fp32" and "tflite" not in info


def test_export_command_help_lists_the_task_export_options():
    """`albert-tf export --help` lists the settings' and the tasks' export options."""
    result = cli.run("albert_tf", "export", "--help")  # (absl's exits with status 1)
    for flag in ("--formats", "--null_threshold", "--threshold", "--eval_data", "--web_variant",
                 "--[no]quantize", "--[no]tflite", "--tflite_variants: Alias for --formats"):
        assert flag in result.stdout, flag
    assert "held-out" in result.stdout  # the task's own help text


def _write_golden(job, path):
    """A toy export format: the `encoded` outputs of fixed token ids, as one .npz
    file, against which a deployment can check its runtime."""
    import numpy as np

    module = job.module
    inputs = {name: np.full((2, module.max_seq_length), 1 if name != "token_ids" else 7,
                            np.int32) for name in module.input_names}
    outputs = {k: np.asarray(v) for k, v in module.run_model(inputs).items()}
    np.savez(path, **{f"input_{k}": v for k, v in inputs.items()}, **outputs)
    return {"file": os.path.basename(path), "outputs": sorted(outputs),
            "note": job.options.golden_note}


@dataclasses.dataclass(frozen=True, kw_only=True)
class GoldenOptions(Settings):
    golden_note: str = setting("none", "golden: a note stored in its description.")


@pytest.fixture
def golden_format():
    entry = formats.register(formats.Format(
        "golden", "golden.npz, outputs of fixed inputs",
        {"fixed": ("golden.npz", "the outputs of two fixed rows")},
        lambda job, variant, path: _write_golden(job, path), options_class=GoldenOptions))
    yield entry
    formats.REGISTRY.unregister(entry.name)


def test_a_format_defined_here_is_written_by_run_export(tmp_path, golden_format):
    import numpy as np

    model_dir, _, _, model = helpers.finetuned_dir(tmp_path / "run", "sst2")
    settings = ExportSettings(model_dir=model_dir, export_dir=str(tmp_path / "export"),
                              precision="fp32", formats="golden", tflite=True,
                              format_options={"golden_note": "given"})
    assert settings.format_names() == ("golden", "tflite")
    assert GoldenOptions in formats.option_classes()  # the export command's flags
    target = finetuned.run_export(settings)["export_dir"]
    info = helpers.export_info(target)
    assert info["formats"]["golden"] == {"file": "golden.npz", "outputs": ["logits"],
                                         "note": "given"}  # it read its own option
    saved = dict(np.load(os.path.join(target, "golden.npz")))
    inputs = {k[len("input_"):]: v for k, v in saved.items() if k.startswith("input_")}
    np.testing.assert_allclose(saved["logits"], model(inputs)["logits"], atol=1e-5)
    assert info["formats"]["tflite"]["file"] == "model.tflite"  # the built-in ones beside it
    # What the measurement runs: the SavedModel and the formats that give runners.
    runners = formats.runners(target, info, settings.format_entries())
    assert list(runners) == ["saved_model_fp32", "tflite_float32"]
    for run in runners.values():
        np.testing.assert_allclose(run(inputs)["logits"], saved["logits"], atol=1e-4)
    with pytest.raises(ValueError, match="formats: unknown export format 'gold'; did you "
                                         "mean 'golden'"):
        ExportSettings(model_dir=model_dir, export_dir="e", formats="gold")


class _TimedFunction:
    """A stand-in `serving_default`: takes its input_signature, answers after `seconds`."""

    def __init__(self, seconds):
        import tensorflow as tf

        self.seconds, self.calls = seconds, []
        self.input_signature = [tf.TensorSpec([None], tf.string, name="text")]

    def __call__(self, text):
        import time

        import tensorflow as tf

        self.calls.append(int(text.shape[0]))
        time.sleep(self.seconds)
        return {"label": tf.constant(["a"] * int(text.shape[0]))}


@pytest.mark.parametrize("fp32, bf16, chosen", [(0.02, 0.005, "bf16"), (0.005, 0.01, "fp32")])
def test_auto_precision_of_an_export_is_decided_by_timing_the_export(fp32, bf16, chosen):
    """Both candidate modules' serving_default timed, interleaved, at batch 1 and 8: the
    bfloat16 product's speed (here 1.95x) does not decide it."""
    import types

    from albert_tf.export import precision

    record = {"compute": "bf16", "requested": "auto", "cpu_bf16_speedup": 1.95}
    assert precision.needs_timing(record)
    assert not precision.needs_timing({**record, "compute": "fp32", "cpu_bf16_speedup": 0.0})
    functions = {"fp32": _TimedFunction(fp32), "bf16": _TimedFunction(bf16)}
    modules = {k: types.SimpleNamespace(_functions={"serving_default": f})
               for k, f in functions.items()}
    got = precision.timed_choice(record, modules, 16)
    assert got["compute"] == chosen and got["reason"].startswith("timed the export's ")
    assert set(got["timings_ms"]) == {"1", "8"}
    assert got["timings_ms"]["1"]["fp32"] >= fp32 * 1e3
    # Interleaved: each candidate called 1 + TIMED_CALLS times per batch size, in turns.
    assert functions["fp32"].calls == functions["bf16"].calls == \
        [1] * (1 + precision.TIMED_CALLS) + [8] * (1 + precision.TIMED_CALLS)
