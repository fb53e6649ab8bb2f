"""Chinese ALBERT checkpoints: Google's albert_*_zh, Hugging Face (safetensors and
pytorch_model.bin), brightmart/albert_zh's own layout (tests/fixtures/reference_models/zh_tiny)."""

import json
import os
import shutil

import numpy as np
import pytest

import albert_tf
from albert_tf.checkpoints import CheckpointError, google
from albert_tf.models.pretraining import AlbertPretrainingModel
from conftest import REFERENCE_MODELS
from helpers import write_tf1_checkpoint

ZH = os.path.join(REFERENCE_MODELS, "zh_tiny")
LAYOUTS = {"google_zh": "google", "hf_zh": "hf", "hf_zh_bin": "hf", "brightmart": "brightmart"}
TOL = 1e-4


def _inputs():
    return {k: v.astype("int32") for k, v in np.load(os.path.join(ZH, "inputs.npz")).items()}


def _expected(layout):
    return dict(np.load(os.path.join(ZH, layout, "expected.npz")))


def _outputs(model, inputs, expected):
    out = model({**inputs, "mask_positions": expected["mlm_positions"]})
    return {k: np.asarray(v) for k, v in out.items()}


def _assert_matches(out, expected, padding_mask):
    real = padding_mask.astype(bool)  # padded positions differ between implementations
    np.testing.assert_allclose(out["sequence_output"][real], expected["sequence_output"][real],
                               atol=TOL)
    for name in ("pooled_output", "mlm_logits", "sop_logits"):
        np.testing.assert_allclose(out[name], expected[name], atol=TOL, err_msg=name)


@pytest.fixture(scope="module")
def loaded():
    """Each layout loaded once, strictly, with its heads."""
    return {layout: albert_tf.load_pretrained(os.path.join(ZH, layout), with_heads=True)
            for layout in LAYOUTS}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_layout_reproduces_its_own_implementation(loaded, layout):
    assert albert_tf.detect_format(os.path.join(ZH, layout)) == LAYOUTS[layout]
    inputs, expected = _inputs(), _expected(layout)
    _assert_matches(_outputs(loaded[layout], inputs, expected), expected, inputs["padding_mask"])


def test_configs_translate_what_each_layout_means():
    google_config = albert_tf.checkpoints.read_checkpoint(os.path.join(ZH, "google_zh")).config
    hf_config = albert_tf.checkpoints.read_checkpoint(os.path.join(ZH, "hf_zh")).config
    bm_config = albert_tf.checkpoints.read_checkpoint(os.path.join(ZH, "brightmart")).config
    assert google_config.activation == "relu"  # as albert_base_zh: never assume GELU
    assert hf_config.activation == "gelu"  # transformers' "gelu" is the exact erf form
    assert bm_config.activation == "gelu_approximate"  # BERT's "gelu": the tanh form
    assert (bm_config.embedding_projection, bm_config.normalize_first) == ("word", False)
    assert google_config.embedding_projection == hf_config.embedding_projection == "summed"


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_text_to_ids_matches_inputs(layout):
    tokenizer = albert_tf.load_tokenizer(os.path.join(ZH, layout), host=True)
    with open(os.path.join(ZH, "texts.json"), encoding="utf-8") as f:
        rows = json.load(f)["rows"]
    inputs = _inputs()
    cls, sep = tokenizer.cls_id, tokenizer.sep_id
    assert (cls, sep) == (101, 102)
    for i, row in enumerate(rows):
        ids = [cls] + tokenizer.encode(row["text_a"]) + [sep]
        assert ids[1:-1] == row["ids_a"]
        if row["text_b"] is not None:
            ids += tokenizer.encode(row["text_b"]) + [sep]
        real = inputs["padding_mask"][i].astype(bool)
        assert ids == inputs["token_ids"][i][real].tolist(), row["source"]


def test_google_zh_prefix_named_directly(loaded):
    inputs, expected = _inputs(), _expected("google_zh")
    prefix = os.path.join(ZH, "google_zh", "model.ckpt-best")
    assert albert_tf.detect_format(prefix) == "google"
    model = albert_tf.load_pretrained(prefix)
    out = model(inputs)
    np.testing.assert_allclose(np.asarray(out["pooled_output"]), expected["pooled_output"],
                               atol=TOL)


def _brightmart_copy(tmp_path, change):
    """brightmart/ with its checkpoint rewritten through `change(tensors)`."""
    folder = tmp_path / "brightmart"
    folder.mkdir()
    for name in ("albert_config_tiny.json", "vocab.txt"):
        shutil.copy(os.path.join(ZH, "brightmart", name), folder)
    tensors = google.read_tensors(os.path.join(ZH, "brightmart", "albert_model.ckpt"))
    change(tensors)
    write_tf1_checkpoint(str(folder / "albert_model.ckpt"), tensors)
    return str(folder)


def test_missing_unexpected_and_misshapen_tensors_are_named(tmp_path):
    def change(tensors):
        del tensors["bert/encoder/layer_shared/output/dense/kernel"]
        tensors["bert/encoder/layer_1/output/dense/kernel"] = np.zeros((64, 32), np.float32)
        tensors["bert/pooler/dense/bias"] = np.zeros((31,), np.float32)

    folder = _brightmart_copy(tmp_path, change)
    with pytest.raises(CheckpointError) as raised:
        albert_tf.load_pretrained(folder, with_heads=True)
    message = str(raised.value)
    assert "ffn_0/output/kernel (expected bert/encoder/layer_shared/output/dense/kernel)" in message
    assert "unexpected in the checkpoint (1):\n    bert/encoder/layer_1/output/dense/kernel" \
        in message
    assert "bert/pooler/dense/bias: checkpoint (31,), model pooler/bias (32,)" in message


def test_preln_config_builds_a_pre_layer_norm_model(tmp_path):
    def no_change(tensors):
        pass

    folder = _brightmart_copy(tmp_path, no_change)
    config_path = os.path.join(folder, "albert_config_tiny.json")
    with open(config_path, encoding="utf-8") as f:
        values = json.load(f)
    with open(config_path, "w", encoding="utf-8") as f:
        json.dump({**values, "ln_type": "preln"}, f)
    model = albert_tf.load_pretrained(folder, with_heads=True)
    assert model.backbone.config.normalize_first
    inputs, expected = _inputs(), _expected("brightmart")
    out = _outputs(model, inputs, expected)
    want = _preln_reference(google.read_tensors(os.path.join(folder, "albert_model.ckpt")),
                            inputs, num_layers=3, num_heads=4)
    real = inputs["padding_mask"].astype(bool)
    np.testing.assert_allclose(out["sequence_output"][real], want[real], atol=TOL)


def _ln(x, gamma, beta):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * gamma + beta


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def _preln_reference(t, inputs, num_layers, num_heads):
    """brightmart's `prelln_transformer_model` on its embeddings, in float64 NumPy."""
    t = {k: np.asarray(v, np.float64) for k, v in t.items()}
    e, layer = "bert/embeddings/", "bert/encoder/layer_shared/"
    ids, segments = inputs["token_ids"], inputs["segment_ids"]
    x = t[e + "word_embeddings"][ids] @ t[e + "word_embeddings_2"]
    x = x + t[e + "token_type_embeddings"][segments]
    x = _ln(x + t[e + "position_embeddings"][:ids.shape[1]], t[e + "LayerNorm/gamma"],
            t[e + "LayerNorm/beta"])
    bias = (1.0 - inputs["padding_mask"][:, None, None, :]) * -10000.0

    def dense(h, name):
        return h @ t[layer + name + "/kernel"] + t[layer + name + "/bias"]

    def heads(h):  # (b, s, H) -> (b, heads, s, d)
        b, s, width = h.shape
        return h.reshape(b, s, num_heads, width // num_heads).transpose(0, 2, 1, 3)

    for _ in range(num_layers):
        h = _ln(x, t[layer + "attention/output/LayerNorm/gamma"],
                t[layer + "attention/output/LayerNorm/beta"])
        q, k, v = (heads(dense(h, f"attention/self/{n}")) for n in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1]) + bias
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(x.shape)
        x = x + dense(context, "attention/output/dense")
        h = _ln(x, t[layer + "output/LayerNorm/gamma"], t[layer + "output/LayerNorm/beta"])
        x = x + dense(_gelu(dense(h, "intermediate/dense")), "output/dense")
    return x


@pytest.mark.parametrize("normalize_first", [False, True])
def test_brightmart_variant_round_trips_through_albert_tf_format(loaded, tmp_path,
                                                                normalize_first):
    model = loaded["brightmart"]
    if normalize_first:  # the same weights in a pre-LayerNorm model
        config = model.backbone.config.replace(normalize_first=True)
        source = AlbertPretrainingModel(albert_tf.AlbertBackbone(config))
        source.set_weights(model.get_weights())
        model = source
    albert_tf.save_pretrained(model, str(tmp_path / "saved"))
    reloaded = albert_tf.load_pretrained(str(tmp_path / "saved"), with_heads=True)
    assert reloaded.backbone.config == model.backbone.config
    inputs, expected = _inputs(), _expected("brightmart")
    want, got = _outputs(model, inputs, expected), _outputs(reloaded, inputs, expected)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_export_hf_refuses_what_hugging_face_cannot_represent(loaded, tmp_path):
    with pytest.raises(ValueError, match=r"embedding_projection='word' .* cannot be written "
                                         r"in the Hugging Face format"):
        albert_tf.export_hf(loaded["brightmart"], str(tmp_path / "hf"))
    config = loaded["hf_zh"].backbone.config.replace(normalize_first=True)
    with pytest.raises(ValueError, match=r"normalize_first=True \(pre-LayerNorm blocks\) "
                                         "cannot be written in the Hugging Face format"):
        albert_tf.export_hf(albert_tf.AlbertBackbone(config), str(tmp_path / "hf"))
    assert not os.path.exists(tmp_path / "hf")


def test_google_layout_exports_to_hugging_face_and_back(loaded, tmp_path):
    albert_tf.export_hf(loaded["google_zh"], str(tmp_path / "hf"))
    reloaded = albert_tf.load_pretrained(str(tmp_path / "hf"), with_heads=True)
    inputs, expected = _inputs(), _expected("google_zh")
    _assert_matches(_outputs(reloaded, inputs, expected), expected, inputs["padding_mask"])


def test_hf_tied_decoder_checked_equal(tmp_path):
    from safetensors.numpy import load_file, save_file

    folder = tmp_path / "hf"
    shutil.copytree(os.path.join(ZH, "hf_zh"), folder)
    tensors = load_file(str(folder / "model.safetensors"))
    tensors["predictions.decoder.weight"] = tensors["albert.embeddings.word_embeddings.weight"]
    tensors["predictions.decoder.bias"] = tensors["predictions.bias"]
    save_file(tensors, str(folder / "model.safetensors"))
    albert_tf.load_pretrained(str(folder), with_heads=True)  # tied copies: accepted
    tensors["predictions.decoder.bias"] = tensors["predictions.bias"] + 1
    save_file(tensors, str(folder / "model.safetensors"))
    with pytest.raises(CheckpointError, match="predictions.decoder.bias should be tied to "
                                              "predictions.bias but differs"):
        albert_tf.load_pretrained(str(folder), with_heads=True)
