"""Reduced exports: TFLite float16, dynamic-range int8 and full-integer int8, and a
SavedModel computing in bfloat16, each against the float32 Keras model.

The model is a small random RTE classifier (H 32, E 16, 2 layers, weights of
scale 0.2) on real RTE sentences (tests/fixtures/quantize: the first short
rows of GLUE RTE train and dev). Narrower models (H 6) lose everything in
full-integer int8 (constant outputs), so this one is wider than the other
export tests'. Tolerances (`TOLERANCE`), as a fraction of the largest |logit|
of the float model on the same inputs; measured: float16 0.7%, dynamic-range
int8 0.7%, bfloat16 about 3%, full-integer int8 5% (27% with the weights of
seed 3: int8 activations of a random model are fragile; what they cost a
fine-tuned model is what `export --eval_data` measures).
"""

import collections
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import cli_helpers as cli
import export_helpers as helpers
from albert_tf import tasks
from albert_tf.backbone import AlbertBackbone
from albert_tf.tokenizer.loading import load_tokenizer
from albert_tf.config import AlbertConfig
from albert_tf.export import comparison, exporter, precision
from albert_tf.export.formats.tflite import convert as tflite
from albert_tf.training import devices
from albert_tf.training.finetuning import save_finetuned
from conftest import FIXTURES
from albert_tf.tasks import finetuned

TOLERANCE = {"float16": 0.02, "dynamic_int8": 0.05, "int8": 0.3, "bf16": 0.08}
DATA = os.path.join(FIXTURES, "quantize", "RTE")
WIDER = dict(helpers.TINY, hidden_dim=32, intermediate_dim=48, embedding_dim=16, num_heads=4)
LENGTH = 24


@pytest.fixture(scope="module")
def rte(tmp_path_factory):
    """(model_dir, float serving module, Keras model, dev inputs, calibration inputs)."""
    task = tasks.get("rte")
    settings = helpers.settings_for("rte", tmp_path_factory.mktemp("quantized"), LENGTH)
    model = task.build_model(AlbertBackbone(AlbertConfig(**WIDER)), settings)
    helpers.randomize(model, seed=0, scale=0.2)
    tokenizer = load_tokenizer(helpers.SPM, host=True)
    model_dir = save_finetuned(model, task, settings,
                               os.path.join(settings.output_dir, "model"), tokenizer)
    module, _ = finetuned.build_serving_module(model_dir)

    def inputs(split):
        features = task.featurize(task.read_examples(DATA, split), tokenizer, settings, split)
        return comparison.encoded_inputs(features, module.input_names)

    return model_dir, module, model, inputs("dev"), inputs("train")


def _float_logits(model, inputs):
    return np.asarray(model(inputs, training=False)["logits"])


def _assert_close(got, expected, tolerance):
    scale = np.abs(expected).max()
    error = np.abs(got - expected).max() / scale
    print(f"max error {error:.4f} of max |logit| {scale:.3f}")
    assert error <= tolerance


def _tensor_types(content, length=LENGTH):
    """(dtypes of the weight matrices, {dtype: count} of activation tensors) of a
    flatbuffer's main graph (the encoder's loop body is a subgraph of its own):
    activations are the tensors with a `max_seq_length` axis (no weight has one)."""
    details = tf.lite.Interpreter(model_content=content).get_tensor_details()
    weights = {d["dtype"] for d in details
               if length not in d["shape"] and d["shape"].size == 2 and d["shape"].min() >= 16}
    activations = collections.Counter(d["dtype"] for d in details if length in d["shape"])
    return weights, activations


def _check_stored(variant, weights, activations):
    if variant == "float16":
        assert np.float16 in weights and not activations[np.int8] and np.int8 not in weights
    elif variant == "dynamic_int8":
        # Int8 weights (but those under 1024 values, such as the embedding
        # projection here), float activations (the int8 embedding lookup's
        # output is dequantized right away).
        assert np.int8 in weights and activations[np.float32] > 3 * activations[np.int8]
    else:
        assert weights == {np.int8} and activations[np.int8] > 2 * activations[np.float32]


@pytest.mark.parametrize("variant", ["float16", "dynamic_int8", "int8"])
def test_tflite_variant_stores_what_it_promises_and_reloads_close_to_the_float_model(
        rte, tmp_path, variant):
    _, module, model, dev, calibration = rte
    path = str(tmp_path / f"{variant}.tflite")
    described = tflite.write(module, path, variant, calibration)
    assert described["variant"] == variant and described["bytes"] == os.path.getsize(path)
    with open(path, "rb") as f:
        _check_stored(variant, *_tensor_types(f.read()))
    reloaded = tflite.TfliteModel(path=path)  # a fresh interpreter on the file
    _assert_close(reloaded(**dev)["logits"], _float_logits(model, dev), TOLERANCE[variant])


def test_bad_tflite_options_are_one_line_errors(rte):
    _, module, _, _, calibration = rte
    with pytest.raises(ValueError, match="unknown TFLite variant 'int4'; choose from float32, "
                                         "float16, dynamic_int8, int8"):
        tflite.convert(module, "int4")
    with pytest.raises(ValueError, match="needs a representative dataset"):
        tflite.convert(module, "int8")
    short = {k: v[:, :7] for k, v in calibration.items()}
    with pytest.raises(ValueError, match=r"representative dataset: token_ids must be "
                                         r"\(examples, 24\), got \(\d+, 7\)"):
        tflite.convert(module, "int8", short)


_FRESH = """
import json, sys
import numpy as np, tensorflow as tf
import tensorflow_text  # noqa: F401
inputs = {k: tf.constant(v, tf.int32) for k, v in json.load(open(sys.argv[2])).items()}
loaded = tf.saved_model.load(sys.argv[1])
out = loaded.signatures["encoded"](**inputs)
served = loaded.signatures["serving_default"](text_a=tf.constant(["A man sleeps."]),
                                              text_b=tf.constant(["He rests."]))
print(json.dumps({"logits": out["logits"].numpy().tolist(), "dtype": out["logits"].dtype.name,
                  "served": served["probabilities"].dtype.name}))
"""


def _bfloat16_ops(graph):
    """Op types of a `GraphDef` (and its functions) with a bfloat16 type attribute."""
    nodes = list(graph.node) + [n for f in graph.library.function for n in f.node_def]
    return {n.op for n in nodes if n.attr["T"].type == tf.bfloat16.as_datatype_enum}


def _saved_graph(version_dir):
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(version_dir, "saved_model.pb"), "rb") as f:
        saved.ParseFromString(f.read())
    return saved.meta_graphs[0].graph_def


def _traced_graph(module):
    function = tf.function(lambda *t: module.run_model(dict(zip(module.input_names, t))))
    specs = [tf.TensorSpec([None, LENGTH], tf.int32) for _ in module.input_names]
    return function.get_concrete_function(*specs).graph.as_graph_def()


def test_bfloat16_module_computes_in_bfloat16(rte):
    model_dir, module, model, dev, _ = rte
    bf16_module, _ = finetuned.Finetuned(model_dir).serving_module(compute="bf16")
    assert tf.keras.mixed_precision.global_policy().name == "float32"  # put back
    assert {"MatMul", "BatchMatMulV2"} <= _bfloat16_ops(_traced_graph(bf16_module))
    assert not _bfloat16_ops(_traced_graph(module))
    got = bf16_module.run_model({k: tf.constant(v) for k, v in dev.items()})["logits"]
    assert got.dtype == tf.float32
    expected = _float_logits(model, dev)
    _assert_close(got.numpy(), expected, TOLERANCE["bf16"])
    assert np.abs(got.numpy() - expected).max() > 1e-5  # bfloat16 rounding, not float32


@pytest.mark.slow
def test_bfloat16_saved_model_is_recorded_and_honoured_in_a_fresh_process(rte, tmp_path):
    model_dir, module, model, dev, _ = rte
    chosen = precision.choose("bf16")
    assert chosen == {"compute": "bf16", "requested": "bf16", "reason": "requested"}
    with precision.compute_in("bf16"):
        bf16_module, info = finetuned.build_serving_module(model_dir)
    info["precision"] = chosen
    target = exporter.write_export(module, info, str(tmp_path / "1"), saved_module=bf16_module)
    assert helpers.export_info(target)["precision"]["compute"] == "bf16"
    assert {"MatMul", "BatchMatMulV2"} <= _bfloat16_ops(_saved_graph(target))

    inputs = {k: v[:5] for k, v in dev.items()}
    path = tmp_path / "inputs.json"
    path.write_text(json.dumps({k: v.tolist() for k, v in inputs.items()}))
    result = subprocess.run([sys.executable, "-c", _FRESH, target, str(path)], env=cli.env(),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["dtype"] == "float32" and out["served"] == "float32"
    got, expected = np.array(out["logits"]), _float_logits(model, inputs)
    _assert_close(got, expected, TOLERANCE["bf16"])
    assert np.abs(got - expected).max() > 1e-5  # bfloat16 rounding, not float32


@pytest.mark.skipif(bool(tf.config.list_physical_devices("GPU")), reason="the CPU rule")
@pytest.mark.parametrize("speedup, compute", [(0.0, "fp32"), (1.1, "fp32"), (2.1, "bf16")])
def test_auto_precision_is_trainings_measured_choice(monkeypatch, speedup, compute):
    monkeypatch.setattr(devices, "cpu_bf16_speedup", lambda: speedup)
    chosen = precision.choose("auto")
    assert chosen["compute"] == compute and chosen["cpu_bf16_speedup"] == speedup
    policy, _ = devices.resolve_precision("auto", "off", None)
    assert devices.precision_name(policy) == compute  # training would choose the same
    with pytest.raises(ValueError, match="--precision: unknown precision 'fp16'; choose one "
                                         "of auto, fp32, bf16"):
        precision.choose("fp16")


def test_export_command_rejects_bad_reduction_options(rte, tmp_path):
    """Through the old spelling --tflite_variants (an alias of --formats); every
    check is in `tests/test_export_settings.py`."""
    model_dir = rte[0]
    base = [f"--model_dir={model_dir}", f"--export_dir={tmp_path}"]
    cases = {("--tflite_variants=float16,int4",): "error: formats: unknown export format "
                                                  "'int4'; known export formats: mediapipe, "
                                                  "mediapipe_embedder, task_library_qa, "
                                                  "tflite, web",
             (f"--eval_data={tmp_path}/none",): f"error: --eval_data: no such folder "
                                                f"{tmp_path}/none"}
    from albert_tf.commands import export

    for args, message in cases.items():  # the command's program, in this process
        assert cli.exit_line(export, *base, *args) == message
    assert not os.listdir(tmp_path)  # nothing written


@pytest.mark.slow
def test_export_records_each_variants_metric_beside_the_float_models(rte, tmp_path):
    from sklearn.metrics import accuracy_score

    model_dir, _, model, dev, _ = rte
    result = cli.run("albert_tf.export", f"--model_dir={model_dir}", f"--export_dir={tmp_path}",
                     "--precision=fp32", "--tflite_variants=float16,int8",
                     f"--eval_data={DATA}", "--calibration_examples=16")
    assert result.returncode == 0, result.stderr[-3000:]
    info = helpers.export_info(str(tmp_path / "1"))
    assert sorted(info["formats"]) == ["tflite:float16", "tflite:int8"]
    for entry in info["formats"].values():
        assert os.path.isfile(tmp_path / "1" / entry["file"])
    assert info["formats"]["tflite:int8"]["calibration_examples"] == 16
    evaluation = info["evaluation"]
    assert (evaluation["split"], evaluation["examples"]) == ("dev", len(dev["token_ids"]))
    spec = tasks.get("rte").spec
    labels = [spec.labels.index(e.label) for e in tasks.get("rte").read_examples(DATA, "dev")]
    logits = _float_logits(model, dev)
    expected = accuracy_score(labels, logits.argmax(-1))
    variants = evaluation["variants"]
    assert sorted(variants) == ["float32", "saved_model_fp32", "tflite_float16", "tflite_int8"]
    assert variants["float32"]["accuracy"] == pytest.approx(expected)
    assert variants["saved_model_fp32"]["accuracy"] == pytest.approx(expected)
    assert variants["tflite_float16"]["max_abs_error"] <= TOLERANCE["float16"] * np.abs(
        logits).max()
    assert all(v["batch1_ms"] > 0 for v in variants.values())
    assert "tflite_int8" in result.stdout and "accuracy" in result.stdout
