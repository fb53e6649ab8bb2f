"""SavedModel exports: signatures, versions, atomicity, and serving from a fresh process."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import cli_helpers as cli
import export_helpers as helpers
from albert_tf.export import exporter
from albert_tf.tasks import finetuned
from helpers import tiny_inputs

SENTENCES = ["A man is playing a guitar.", "", "Café ΟΔΟΣ 東京 🙂 naïve, 12,345 ﬁve ½",
             "word " * 40]
SECOND = ["Someone plays music.", "x", "", "Nobody."]
QUESTIONS = ["Who wrote the book?", "", "Where?", "when 1990"]
CONTEXTS = ["Anna wrote the book in 1990, in Paris. She lived there for ten years, then left.",
            "", "Paris", "In 1990, Anna wrote ``the book'' in Paris " * 6]


@pytest.fixture(scope="module")
def sst2(tmp_path_factory):
    return helpers.exported(tmp_path_factory, "sst2")


@pytest.fixture(scope="module")
def stsb(tmp_path_factory):
    return helpers.exported(tmp_path_factory, "stsb")


def test_single_sentence_classifier_matches_the_host_pipeline(sst2):
    path, _, task, settings, model = sst2
    got = helpers.serve(path, text=SENTENCES)
    assert got["label_id"].dtype == np.int32 and got["probabilities"].dtype == np.float32
    assert len(set(got["label_id"].tolist())) > 1  # the test can tell labels apart
    expected = helpers.expected_classification(task, settings, model, SENTENCES)
    helpers.assert_outputs_close(got, expected)


def test_pair_regression_matches_the_host_pipeline(stsb):
    path, _, task, settings, model = stsb
    got = helpers.serve(path, text_a=SENTENCES, text_b=SECOND)
    assert got["score"].shape == (4,) and got["score"].dtype == np.float32
    expected = helpers.expected_classification(task, settings, model, SENTENCES, SECOND)
    helpers.assert_outputs_close(got, expected)


@pytest.mark.slow
def test_pair_classifier_in_memory_matches_the_host_pipeline(tmp_path):
    model_dir, task, settings, model = helpers.finetuned_dir(tmp_path, "mnli")
    module, info = finetuned.build_serving_module(model_dir)
    assert info["inputs"] == ["text_a", "text_b"]
    got = {k: v.numpy() for k, v in module.serving_default(tf.constant(SENTENCES),
                                                           tf.constant(SECOND)).items()}
    expected = helpers.expected_classification(task, settings, model, SENTENCES, SECOND)
    assert len(set(expected["label_id"].tolist())) > 1  # the test can tell labels apart
    helpers.assert_outputs_close(got, expected)


def test_encoded_signature_returns_the_raw_model_outputs(sst2):
    path, _, _, _, model = sst2
    encoded = helpers.signature(path, "encoded")
    inputs = tiny_inputs(seed=2, vocabulary_size=30000, seq=13)
    got = encoded(**{k: tf.constant(v) for k, v in inputs.items()})
    np.testing.assert_allclose(got["logits"].numpy(), model(inputs)["logits"], atol=1e-5)


def test_text_inputs_that_are_not_one_batch_of_vectors_are_refused(sst2, stsb):
    helpers.assert_refuses_other_shapes(helpers.signature(sst2[0]), text=SENTENCES[:2])
    helpers.assert_refuses_other_shapes(helpers.signature(stsb[0]), text_a=SENTENCES[:2],
                                        text_b=SECOND[:2])


def test_export_layout_and_description(sst2):
    path, model_dir, _, settings, _ = sst2
    assert sorted(os.listdir(path)) == sorted(
        ["assets", "assets.extra", "fingerprint.pb", "model_dynamic_int8.tflite", "saved_model.pb",
         "variables"])
    info = helpers.export_info(path)
    assert info["task"] == "sst2" and info["inputs"] == ["text"]
    assert info["labels"] == ["0", "1"] and info["max_seq_length"] == settings.max_seq_length
    tflite = info["formats"]["tflite:dynamic_int8"]  # --quantize's current spelling
    assert tflite["quantized"] is True
    assert os.path.getsize(os.path.join(path, "model_dynamic_int8.tflite")) == tflite["bytes"]


def test_versions_count_up_from_the_highest_numeric_folder(tmp_path):
    root = tmp_path / "exports"
    assert exporter.next_version(str(root)) == 1
    for name in ("1", "7", "12x", ".7.tmp-abc"):
        (root / name).mkdir(parents=True)
    (root / "30").write_text("a file, not a version")
    assert exporter.versions(str(root)) == [1, 7]
    assert exporter.next_version(str(root)) == 8


def test_existing_or_bad_versions_are_refused(tmp_path, sst2):
    model_dir = sst2[1]
    (tmp_path / "3").mkdir()
    with pytest.raises(FileExistsError, match="3 already exists"):
        finetuned.export_model(model_dir, str(tmp_path), version=3)
    for bad in (0, -2, "4", True):
        with pytest.raises(ValueError, match="version must be (an integer|>= 1)"):
            finetuned.export_model(model_dir, str(tmp_path), version=bad)


# Default tier: test_api.py's test_each_function_equals_its_command_and_a_dataframe_trains_as_
# its_file runs the export command.
@pytest.mark.slow
def test_export_command(tmp_path, sst2):
    root = tmp_path / "exports"
    result = cli.run("albert_tf.export", f"--model_dir={os.path.dirname(sst2[1])}",
                     f"--export_dir={root}", "--version=5", "--quantize")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == str(root / "5")
    # TensorFlow's INFO lines (saver sharding, assets, fingerprint) are not printed.
    assert "Sharding callback" not in result.stderr and "Assets written" not in result.stderr
    assert sorted(os.listdir(root)) == ["5"]
    assert helpers.export_info(str(root / "5"))["formats"]["tflite:dynamic_int8"]["quantized"]
    assert cli.one_line_error(cli.run("albert_tf.export", f"--export_dir={root}")) == (
        "error: missing required flag(s): --model_dir")


def test_a_null_threshold_is_refused_outside_squad_v2(tmp_path, sst2):
    with pytest.raises(ValueError, match="task .sst2. takes no export option.s. null_threshold"):
        finetuned.export_model(sst2[1], str(tmp_path), null_threshold=0.5)
    assert os.listdir(tmp_path) == []


def test_model_dir_may_be_the_run_folder(tmp_path, sst2):
    model_dir = sst2[1]
    assert exporter.resolve_model_dir(os.path.dirname(model_dir)) == model_dir
    with pytest.raises(FileNotFoundError, match="not a fine-tuned model folder"):
        exporter.resolve_model_dir(str(tmp_path))


def test_a_failed_export_leaves_no_version_folder(tmp_path, sst2, monkeypatch):
    root = tmp_path / "exports"
    (root / "2").mkdir(parents=True)

    def fail_midway(module, info, path):
        with open(os.path.join(path, "saved_model.pb"), "wb") as f:
            f.write(b"half a model")
        raise OSError("disk full")

    monkeypatch.setattr(exporter, "save_module", fail_midway)
    with pytest.raises(OSError, match="disk full"):
        finetuned.export_model(sst2[1], str(root))
    assert sorted(os.listdir(root)) == ["2"]  # no "3", no temporary folder left


# TensorFlow's own program started as a process (~7 s of CPU); the signatures
# themselves are read in-process by every export test.
@pytest.mark.slow
def test_saved_model_cli_lists_the_signatures(sst2):
    cli_path = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    if not os.path.isfile(cli_path):
        pytest.skip("saved_model_cli is not installed beside this Python")
    result = subprocess.run([cli_path, "show", "--dir", sst2[0], "--all"], capture_output=True,
                            text=True, timeout=300, env=cli.env())
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    for expected in ("signature_def['serving_default']", "signature_def['encoded']",
                     "inputs['text'] tensor_info:", "outputs['probabilities'] tensor_info:",
                     "inputs['padding_mask'] tensor_info:", "outputs['logits'] tensor_info:"):
        assert expected in out, out


# TensorFlow Text's ops an English export uses: SentencePiece, and Unicode
# normalization (the tie repair counts the characters an <unk> covers).
TF_TEXT_OPS = {"SentencepieceOp", "SentencepieceTokenizeOp",
               "SentencepieceTokenizeWithOffsetsOp", "NormalizeUTF8"}


def test_only_tensorflow_text_ops_come_from_outside_core_tensorflow(tmp_path_factory, sst2):
    """What a model server needs besides TensorFlow: TF Text's ops (the
    tensorflow/serving model server links TensorFlow Text's op library)."""
    for path in (sst2[0], helpers.exported(tmp_path_factory, "squad")[0]):
        extra = {op for op in helpers.op_types(path) if not hasattr(tf.raw_ops, op)}
        assert extra and extra <= TF_TEXT_OPS, extra
        # In-process inference takes XLA-fused kernels (albert_tf.layers.fused); exports not.
        assert helpers.xla_compiled_functions(path) == []


FRESH_PROCESS = r"""
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401 - the SentencePiece op
requests = json.loads(sys.argv[1])
results = {}
for name, (path, inputs) in requests.items():
    signature = tf.saved_model.load(path).signatures["serving_default"]
    outputs = signature(**{k: tf.constant(v) for k, v in inputs.items()})
    results[name] = {k: [s.decode() for s in v.numpy()] if v.dtype == tf.string
                     else v.numpy().tolist() for k, v in outputs.items()}
leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("albert_tf", "tasks", "keras_hub"))
print(json.dumps({"results": results, "leaked": leaked}))
"""


# Four exports loaded in a fresh process (~26 s of CPU); the default tier loads an
# export in a fresh process through `albert-tf predict` (test_predict.py).
@pytest.mark.slow
def test_exports_serve_from_a_fresh_process_without_albert_tf(tmp_path_factory, sst2, stsb):
    """Principle 9: TensorFlow and TensorFlow Text alone serve every task's export."""
    squad = helpers.exported(tmp_path_factory, "squad")
    squad_v2 = helpers.exported(tmp_path_factory, "squad_v2")
    qa = {"question": QUESTIONS, "context": CONTEXTS}
    requests = {"sst2": (sst2[0], {"text": SENTENCES}),
                "stsb": (stsb[0], {"text_a": SENTENCES, "text_b": SECOND}),
                "squad": (squad[0], qa), "squad_v2": (squad_v2[0], qa)}
    env = dict(cli.env(), PYTHONPATH="")  # albert_tf is not importable there
    result = subprocess.run([sys.executable, "-c", FRESH_PROCESS, json.dumps(requests)],
                            capture_output=True, text=True, timeout=300, env=env,
                            cwd=str(tmp_path_factory.mktemp("elsewhere")))
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["leaked"] == []
    got = {name: {k: np.array(v, dtype=object if isinstance(v[0], str) else None)
                  for k, v in outputs.items()} for name, outputs in report["results"].items()}
    expected = {"sst2": helpers.expected_classification(*sst2[2:], SENTENCES),
                "stsb": helpers.expected_classification(*stsb[2:], SENTENCES, SECOND),
                "squad": helpers.expected_squad(squad, QUESTIONS, CONTEXTS),
                "squad_v2": helpers.expected_squad(squad_v2, QUESTIONS, CONTEXTS)}
    expected["sst2"]["label"] = [label.decode() for label in expected["sst2"]["label"]]
    for name in expected:
        helpers.assert_outputs_close(got[name], expected[name], atol=1e-4)
    for name in ("squad", "squad_v2"):
        for i, answer in enumerate(got[name]["answer"]):
            assert CONTEXTS[i][got[name]["start"][i]:got[name]["end"][i]] == answer


@pytest.mark.slow
def test_finetune_export_flag_exports_at_the_end_of_the_run(tmp_path):
    out = tmp_path / "run"
    result = cli.run("albert_tf.finetune", *cli.rte_args(out, cli.tiny_model(tmp_path)),
                     "--train_steps=4", "--export")
    assert result.returncode == 0, result.stderr[-3000:]
    version = out / "export" / "1"
    assert f"export: {version}" in result.stdout
    signatures = tf.saved_model.load(str(version)).signatures
    assert sorted(signatures) == ["encoded", "serving_default"]
    got = signatures["serving_default"](text_a=tf.constant(["A cat sat."]),
                                        text_b=tf.constant(["A cat is sitting."]))
    assert got["label"].numpy()[0].decode() in ("entailment", "not_entailment")
    shutil.rmtree(out / "export")
    resumed = cli.run("albert_tf.finetune", f"--output_dir={out}", "--export")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert os.path.isdir(out / "export" / "1")
