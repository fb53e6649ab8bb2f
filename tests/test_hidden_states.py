"""Per-layer hidden states and their statistics (`python -m albert_tf.inspect --hidden_states`).

The reference is Hugging Face's ALBERT forward pass (`output_hidden_states`),
written out here in numpy from the safetensors weights of the reference models
(transformers' `modeling_albert.py`: embeddings, LayerNorm, the
`embedding_hidden_mapping_in` projection, then layer `l` running group
`int(l / (L / G))`'s inner layers; `gelu_new`). It reproduces the models'
`expected.npz`, which `transformers` itself wrote, so it is tied to the
independent implementation; the statistics are then taken from it token by
token, in plain Python.
"""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import REFERENCE_MODELS, SHARED
from helpers import reference, tiny_config, tiny_inputs

STATISTICS = ("l2_distance", "cosine_similarity", "angle_degrees", "cosine_to_final")


# -- the numpy reference ---------------------------------------------------------------------

def _layer_norm(x, t, name, eps):
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + eps) * t[name + ".weight"] + t[name + ".bias"]


def _linear(x, t, name):
    return x @ t[name + ".weight"].T + t[name + ".bias"]  # torch stores (out, in)


def _gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def _albert_layer(x, t, p, bias, heads, eps):
    batch, seq, hidden = x.shape

    def split(y):  # (batch, heads, seq, head_dim)
        return y.reshape(batch, seq, heads, hidden // heads).transpose(0, 2, 1, 3)

    q, k, v = (split(_linear(x, t, p + "attention." + n)) for n in ("query", "key", "value"))
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hidden // heads) + bias
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
    attended = _layer_norm(x + _linear(context, t, p + "attention.dense"), t,
                           p + "attention.LayerNorm", eps)
    ffn = _linear(_gelu_new(_linear(attended, t, p + "ffn")), t, p + "ffn_output")
    return _layer_norm(ffn + attended, t, p + "full_layer_layer_norm", eps)


def hf_hidden_states(hf_folder, inputs):
    """`output_hidden_states` of Hugging Face's `AlbertModel`, in float64."""
    from safetensors.numpy import load_file

    with open(os.path.join(hf_folder, "config.json")) as f:
        config = json.load(f)
    t = {k: v.astype(np.float64)
         for k, v in load_file(os.path.join(hf_folder, "model.safetensors")).items()}
    ids, segments, mask = inputs["token_ids"], inputs["segment_ids"], inputs["padding_mask"]
    eps, e = config["layer_norm_eps"], "albert.embeddings."
    x = (t[e + "word_embeddings.weight"][ids] + t[e + "token_type_embeddings.weight"][segments]
         + t[e + "position_embeddings.weight"][np.arange(ids.shape[1])][None])
    x = _linear(_layer_norm(x, t, e + "LayerNorm", eps), t,
                "albert.encoder.embedding_hidden_mapping_in")
    bias = (1.0 - mask[:, None, None, :]) * np.finfo(np.float64).min
    layers, groups = config["num_hidden_layers"], config["num_hidden_groups"]
    states = [x]
    for layer in range(layers):
        group = int(layer / (layers / groups))
        for inner in range(config["inner_group_num"]):
            prefix = f"albert.encoder.albert_layer_groups.{group}.albert_layers.{inner}."
            x = _albert_layer(x, t, prefix, bias, config["num_attention_heads"], eps)
        states.append(x)
    return states


def reference_statistics(states, padding_mask):
    """The issue's definitions, token by token."""
    tokens = list(zip(*np.nonzero(padding_mask)))
    rows = []
    for layer in range(1, len(states)):
        sums = dict.fromkeys(STATISTICS, 0.0)
        for b, s in tokens:
            before, after, final = (states[i][b, s] for i in (layer - 1, layer, -1))
            cosine = before @ after / (np.linalg.norm(before) * np.linalg.norm(after))
            sums["l2_distance"] += math.dist(before, after)
            sums["cosine_similarity"] += cosine
            sums["angle_degrees"] += math.degrees(math.acos(min(1.0, max(-1.0, cosine))))
            sums["cosine_to_final"] += (after @ final
                                        / (np.linalg.norm(after) * np.linalg.norm(final)))
        rows.append({"layer": layer, **{k: v / len(tokens) for k, v in sums.items()}})
    return {"layers": rows, "tokens": len(tokens)}


def assert_statistics_close(actual, expected, tolerance=1e-4):
    assert actual["tokens"] == expected["tokens"]
    assert [r["layer"] for r in actual["layers"]] == [r["layer"] for r in expected["layers"]]
    for got, want in zip(actual["layers"], expected["layers"]):
        for name in STATISTICS:
            assert abs(got[name] - want[name]) < tolerance, (got["layer"], name, got, want)


# -- the reference itself, against transformers' own outputs -----------------------------------

@pytest.mark.parametrize("name", ["tiny", "tiny_grouped"])
def test_numpy_reference_reproduces_transformers(name):
    inputs, expected, folder = reference(name)
    states = hf_hidden_states(os.path.join(folder, "hf"), inputs)
    real = inputs["padding_mask"].astype(bool)
    np.testing.assert_allclose(states[-1][real], expected["sequence_output"][real], atol=1e-5)


# -- the model's per-layer outputs and the statistics -------------------------------------------

def _check_against_reference(root, name, layout):
    from albert_tf import hidden_states
    from albert_tf.checkpoints import load_pretrained

    folder = os.path.join(root, name)
    inputs = dict(np.load(os.path.join(folder, "inputs.npz")))
    want = hf_hidden_states(os.path.join(folder, "hf"), inputs)
    got = load_pretrained(os.path.join(folder, layout)).hidden_states(inputs)
    real = inputs["padding_mask"].astype(bool)
    assert len(got) == len(want)
    for layer, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(np.asarray(g)[real], w[real], atol=1e-5, err_msg=str(layer))
    statistics = hidden_states.LayerStatistics()
    statistics.add([np.asarray(g) for g in got], inputs["padding_mask"])
    assert_statistics_close(statistics.result(),
                            reference_statistics(want, inputs["padding_mask"]))


@pytest.mark.parametrize("name,layout", [("tiny", "hf"), ("tiny_grouped", "google")])
def test_hidden_states_equal_the_reference(name, layout):
    _check_against_reference(REFERENCE_MODELS, name, layout)


@pytest.mark.shared
@pytest.mark.parametrize("layout", ["hf", "google", "keras_hub"])
@pytest.mark.parametrize("name", ["tiny", "tiny_grouped"])
def test_hidden_states_equal_the_reference_shared(name, layout):
    _check_against_reference(os.path.join(SHARED, "fixtures", "reference_models"), name, layout)


@pytest.mark.parametrize("sharing,inner", [("all", 2), ("none", 1), ("attention", 2)])
def test_last_hidden_state_is_the_sequence_output(sharing, inner):
    from albert_tf.backbone import AlbertBackbone

    model = AlbertBackbone(tiny_config(sharing=sharing, num_inner_repetitions=inner))
    inputs = tiny_inputs()
    states = model.hidden_states(inputs)
    assert len(states) == 3 + 1 and all(tuple(s.shape) == (3, 7, 6) for s in states)
    np.testing.assert_allclose(states[-1], model(inputs)["sequence_output"], atol=1e-6)
    np.testing.assert_allclose(
        states[0], model.embeddings(inputs["token_ids"], inputs["segment_ids"]), atol=1e-6)


def test_statistics_by_hand_ignore_padding_and_add_up_over_batches():
    from albert_tf.hidden_states import LayerStatistics

    # One text, two real tokens and a padded one full of garbage.
    h0 = np.array([[[1.0, 0.0], [3.0, 4.0], [9.0, 9.0]]])
    h1 = np.array([[[0.0, 2.0], [3.0, 4.0], [-9.0, 1.0]]])
    mask = np.array([[1, 1, 0]])
    one = LayerStatistics()
    one.add([h0, h1], mask)
    row = one.result()["layers"][0]
    assert one.result()["tokens"] == 2
    assert row["l2_distance"] == pytest.approx(math.sqrt(5) / 2)
    assert row["cosine_similarity"] == pytest.approx(0.5)  # (0 + 1) / 2
    assert row["angle_degrees"] == pytest.approx(45.0)  # (90 + 0) / 2
    assert row["cosine_to_final"] == pytest.approx(1.0)
    # The same two tokens in two batches.
    two = LayerStatistics()
    two.add([h0[:, :1], h1[:, :1]], mask[:, :1])
    two.add([h0[:, 1:], h1[:, 1:]], mask[:, 1:])
    assert_statistics_close(two.result(), one.result(), tolerance=1e-12)


class _Words:
    """A tokenizer stand-in: "w17" is id 17."""

    cls_id, sep_id = 2, 3

    def encode_batch(self, texts):
        return [[int(w[1:]) for w in t.split()] for t in texts]


def test_texts_are_wrapped_cut_and_batched_by_length():
    from albert_tf.hidden_states import batches, encode_texts

    sequences, cut = encode_texts(_Words(), ["w7 w8 w9 w10", "w5", "w6 w6"], max_length=5)
    assert (sequences, cut) == ([[2, 7, 8, 9, 3], [2, 5, 3], [2, 6, 6, 3]], 1)
    first, second = batches(sequences, batch_size=2, pad_id=0)
    np.testing.assert_array_equal(first["token_ids"], [[2, 5, 3, 0], [2, 6, 6, 3]])
    np.testing.assert_array_equal(first["padding_mask"], [[1, 1, 1, 0], [1, 1, 1, 1]])
    np.testing.assert_array_equal(first["segment_ids"], np.zeros((2, 4)))
    np.testing.assert_array_equal(second["token_ids"], [[2, 7, 8, 9, 3]])


def test_read_texts_skips_blank_lines_and_names_bad_ones(tmp_path):
    from albert_tf.hidden_states import read_texts

    good = tmp_path / "texts.txt"
    good.write_bytes("\ufeffone text\r\n\n  \nsecond\n".encode())
    assert read_texts(str(good)) == ["one text", "second"]
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\n\xff\xfe broken\n")
    with pytest.raises(ValueError, match=r"bad.txt:2: not UTF-8"):
        read_texts(str(bad))
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(ValueError, match="no texts"):
        read_texts(str(tmp_path / "empty.txt"))


# -- the command -------------------------------------------------------------------------------

def _inspect(*args):
    return subprocess.run([sys.executable, "-m", "albert_tf.inspect", *args],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow  # a minute of CI; the slow tier (make test-all) runs it
def test_command_writes_the_reference_figures_for_two_checkpoints(tmp_path):
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(5, 120)]
    (tmp_path / "vocab.txt").write_text("\n".join(words) + "\n")
    rng = np.random.default_rng(3)
    texts = [[int(i) for i in rng.integers(5, 120, n)] for n in (4, 11, 1, 40, 7)]
    (tmp_path / "texts.txt").write_text(
        "\n".join(" ".join(f"W{i}" for i in ids) for ids in texts) + "\n\n")
    paths = [os.path.join(REFERENCE_MODELS, "tiny", "hf"),
             os.path.join(REFERENCE_MODELS, "tiny_grouped", "google")]
    out = tmp_path / "out"
    result = _inspect("--hidden_states", f"--init_checkpoint={paths[0]}",
                      f"--compare={paths[1]}", f"--vocab_file={tmp_path / 'vocab.txt'}",
                      f"--input={tmp_path / 'texts.txt'}", f"--output={out}", "--batch_size=2")
    assert result.returncode == 0, result.stderr
    assert "1 of 5 texts cut to 32 tokens" in result.stderr
    assert (out / "hidden_states.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # [CLS] text [SEP], the 40-word text cut to the models' 32 positions; one batch.
    sequences = [[2, *ids[:30], 3] for ids in texts]
    width = max(len(s) for s in sequences)
    inputs = {"token_ids": np.array([s + [0] * (width - len(s)) for s in sequences]),
              "padding_mask": np.array([[1] * len(s) + [0] * (width - len(s))
                                        for s in sequences])}
    inputs["segment_ids"] = np.zeros_like(inputs["token_ids"])
    for name, folder in zip(("hidden_states", "hidden_states_compare"), ("tiny", "tiny_grouped")):
        want = reference_statistics(
            hf_hidden_states(os.path.join(REFERENCE_MODELS, folder, "hf"), inputs),
            inputs["padding_mask"])
        assert_statistics_close(json.loads((out / f"{name}.json").read_text()), want)


def test_command_without_input_is_one_line():
    result = _inspect("--hidden_states", "--init_checkpoint=somewhere")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: --hidden_states needs --init_checkpoint=CHECKPOINT and --input=TEXTS "
        "(a file, one text per line)"]
