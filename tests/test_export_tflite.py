"""TFLite exports agree with the SavedModel's `encoded` signature.

Tolerances: float TFLite within 1e-4 (absolute) of the SavedModel; dynamic-range
int8 (int8 weights, float activations) within 20% of the largest output
magnitude. The tiny models here have large random weights and 4-wide
embeddings, whose LayerNorm amplifies the weight rounding: they differ by up to
about 10%. What quantization costs a real fine-tuned model is measured on its
dev set by bench/tflite_eval.py.
"""

import numpy as np
import pytest

import export_helpers as helpers
from albert_tf.export import exporter
from albert_tf.export.formats.tflite import convert as tflite
from albert_tf.tasks import finetuned
from helpers import tiny_inputs

QUANTIZED_TOLERANCE = 0.2  # of max |output|


def _inputs(names, length, batch=3):
    inputs = tiny_inputs(seed=5, vocabulary_size=30000, batch=batch, seq=length)
    inputs["p_mask"] = (np.arange(length)[None] % 4 == 1).astype("int32").repeat(batch, 0)
    inputs["p_mask"][:, 0] = 0
    return {k: inputs[k] for k in names}


def _reference(path, inputs):
    outputs = helpers.signature(path, "encoded")(**inputs)
    return {k: v.numpy() for k, v in outputs.items()}


def _compare(got, expected, p_mask, atol):
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        if name.endswith("_index"):
            np.testing.assert_array_equal(got[name], value, err_msg=name)
            continue
        keep = np.ones(value.shape, bool)
        if value.ndim == 2 and p_mask is not None and value.shape == p_mask.shape:
            keep = p_mask == 0  # masked logits are -1e30 in both
            assert (got[name][~keep] <= -1e29).all(), name
        np.testing.assert_allclose(got[name][keep], value[keep], atol=atol, err_msg=name)


# SQuAD's conversion takes ~10 s of CPU: the slow tier; the default tier converts a
# classifier, and converts a SQuAD model for the Task Library in test_phone_export.py.
@pytest.mark.parametrize("task_name", ["sst2", pytest.param("squad", marks=pytest.mark.slow)])
def test_float_tflite_matches_the_saved_model(tmp_path_factory, task_name):
    path, model_dir, *_ = helpers.exported(tmp_path_factory, task_name)
    module, _ = finetuned.build_serving_module(model_dir)
    model = tflite.TfliteModel(content=tflite.convert(module, quantize=False))
    assert model.max_seq_length == module.max_seq_length
    assert model.input_names == tuple(sorted(module.input_names))
    inputs = _inputs(module.input_names, module.max_seq_length)
    _compare(model(**inputs), _reference(path, inputs), inputs.get("p_mask"), atol=1e-4)
    one = {k: v[:1] for k, v in inputs.items()}  # another batch size
    _compare(model(**one), _reference(path, one), one.get("p_mask"), atol=1e-4)


def test_quantized_export_is_smaller_and_close(tmp_path_factory):
    path, model_dir, *_ = helpers.exported(tmp_path_factory, "sst2")  # exported --quantize
    info = helpers.export_info(path)["formats"]["tflite:dynamic_int8"]
    quantized = tflite.TfliteModel(path=f"{path}/{info['file']}")
    module, _ = finetuned.build_serving_module(model_dir)
    float_bytes = len(tflite.convert(module, quantize=False))
    ratio = info["bytes"] / float_bytes
    print(f"TFLite size: float {float_bytes} B, int8 dynamic range {info['bytes']} B, "
          f"ratio {ratio:.2f}")
    assert ratio < 0.5
    inputs = _inputs(module.input_names, module.max_seq_length)
    expected = _reference(path, inputs)
    scale = np.abs(expected["logits"]).max()
    _compare(quantized(**inputs), expected, None, atol=QUANTIZED_TOLERANCE * scale)


def test_tflite_model_checks_its_inputs(tmp_path_factory):
    path, *_ = helpers.exported(tmp_path_factory, "sst2")
    model = tflite.TfliteModel(path=f"{path}/model_dynamic_int8.tflite")
    inputs = _inputs(model.input_names, model.max_seq_length)
    with pytest.raises(ValueError, match=r"missing inputs \['segment_ids'\]"):
        model(**{k: v for k, v in inputs.items() if k != "segment_ids"})
    short = {k: v[:, :7] for k, v in inputs.items()}
    with pytest.raises(ValueError, match=rf"padding_mask must be \(batch_size, "
                                         rf"{model.max_seq_length}\), got \(3, 7\)"):
        model(**short)


@pytest.mark.slow
def test_beam_head_in_tflite(tmp_path_factory):
    path, model_dir, *_ = helpers.exported(tmp_path_factory, "squad_v2")
    module, _ = finetuned.build_serving_module(model_dir)
    inputs = _inputs(module.input_names, module.max_seq_length)
    expected = _reference(path, inputs)
    float_model = tflite.TfliteModel(content=tflite.convert(module, quantize=False))
    _compare(float_model(**inputs), expected, inputs["p_mask"], atol=1e-4)
    quantized = tflite.TfliteModel(content=tflite.convert(module, quantize=True))
    got = quantized(**inputs)
    for name in ("cls_logits", "start_top_log_probs"):  # indices may swap on near-ties
        scale = np.abs(expected[name]).max()
        np.testing.assert_allclose(got[name], expected[name],
                                   atol=QUANTIZED_TOLERANCE * scale, err_msg=name)
