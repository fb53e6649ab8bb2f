"""End to end, as a user runs it: fine-tune on CoNLL (SentencePiece) and on CLUENER JSON lines
(WordPiece, CRF), evaluate, export, and serve the export from a fresh process, hostile inputs
included; `predict` reads the export and a checkpoint folder alike."""

import json
import os
import subprocess
import sys

import pytest

import cli_helpers as cli
from conftest import FIXTURES

NER = os.path.join(FIXTURES, "ner")
WORDPIECE = os.path.join(FIXTURES, "wordpiece", "vocab.txt")
HOSTILE = ["", ("Paris, 巴黎 and Rome. " * 600)[:10_000], "!!!...,,,", "叶老桂认为，浙商银行",
           "x" * 10_000]

RELOAD = r"""
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401 - the tokenizer ops
loaded = tf.saved_model.load(sys.argv[1])
texts = [t.encode() for t in json.loads(sys.argv[2])] + [b"\xff\xfe\xc3 ok"]
out = loaded.signatures["serving_default"](text=tf.constant(texts))
print(json.dumps({k: v.numpy().tolist() for k, v in out.items()
                  if k.startswith("num_") or k in ("entity_start", "entity_end")}))
"""


def _model_config(folder, vocabulary_size):
    path = os.path.join(folder, "model.json")
    with open(path, "w") as f:
        json.dump({"vocabulary_size": vocabulary_size, "num_layers": 2, "num_heads": 2,
                   "hidden_dim": 16, "intermediate_dim": 24, "embedding_dim": 8,
                   "max_sequence_length": 32}, f)
    return path


def _finetune(tmp_path, vocabulary, size, train, dev, *extra):
    out = str(tmp_path / "run")
    result = cli.run("albert_tf.finetune", "--task=token_classification",
                     f"--train_file={train}", f"--eval_file={dev}", f"--vocab_file={vocabulary}",
                     f"--model={_model_config(str(tmp_path), size)}", f"--output_dir={out}",
                     "--max_seq_length=16", "--batch_size=4", "--train_steps=6",
                     "--warmup_steps=1", "--learning_rate=1e-3", "--precision=fp32",
                     "--do_eval", "--export", *extra, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("vocabulary, size, train, dev, extra", [
    (cli.SPM, 30000, "train.conll", "dev.conll", ()),
    (WORDPIECE, 21128, "cluener_train.json", "cluener_dev.json", ("--crf",))],
    ids=["conll-sentencepiece", "cluener-wordpiece-crf"])
def test_finetune_evaluate_export_and_serve(tmp_path, vocabulary, size, train, dev, extra):
    out = _finetune(tmp_path, vocabulary, size, os.path.join(NER, train),
                    os.path.join(NER, dev), *extra)
    metrics = cli.results(out)["dev"]
    assert 0 <= metrics["f1"] <= 1 and metrics["examples"] > 0
    # The written CoNLL files score the same with the command.
    scored = cli.run("albert_tf.tasks.token_classification.ner_eval", os.path.join(out, "dev_gold.conll"),
                     os.path.join(out, "dev_predicted.conll"), "--json")
    assert json.loads(scored.stdout)["f1"] == pytest.approx(metrics["f1"])

    version = os.path.join(out, "export", "1")
    reload = subprocess.run([sys.executable, "-c", RELOAD, version, json.dumps(HOSTILE)],
                            capture_output=True, text=True, env=cli.env(), timeout=600)
    assert reload.returncode == 0, reload.stderr[-3000:]
    served = json.loads(reload.stdout)
    assert served["num_tokens"][0] == 0 and served["num_entities"][0] == 0  # empty text
    # 10,000 characters: many windows of 14 tokens, not one (texts are tagged up to
    # WINDOWED_LENGTHS x max_seq_length = 128 tokens' worth of characters, SERVING.md).
    assert served["num_tokens"][1] > 8 * 14
    for starts, ends in zip(served["entity_start"], served["entity_end"]):
        assert all(0 <= s < e or s == e == -1 for s, e in zip(starts, ends))

    for model in (os.path.join(out, "export"), out):  # an export, then a checkpoint folder
        answer = subprocess.run(
            [sys.executable, "-m", "albert_tf.predict", f"--model={model}"],
            input='{"id": 1, "text": "EU rejects German call"}\n', capture_output=True,
            text=True, cwd=cli.ROOT, env=cli.env(), timeout=600)
        assert answer.returncode == 0, answer.stderr[-2000:]
        row = json.loads(answer.stdout)
        assert row["id"] == 1 and [w["word"] for w in row["words"]] == [
            "EU", "rejects", "German", "call"]
        assert all(w["tag"] for w in row["words"]) and isinstance(row["entities"], list)
        from albert_tf.commands import api  # the same answer in Python

        assert api.load(model).predict([{"id": 1, "text": "EU rejects German call"}]) == [row]


@pytest.mark.slow
@pytest.mark.parametrize("crf", [False, True])
def test_tflite_gives_the_logits(crf):
    """TFLite serves the `encoded` signature (no tokenizer op): the model's logits; the
    CRF's Viterbi then runs on the host (`AlbertTokenClassifier.decode`)."""
    import numpy as np
    import tensorflow as tf

    from albert_tf.tokenizer.loading import load_tokenizer
    from albert_tf.export.formats.tflite import convert as tflite
    from albert_tf.export.token_classification import TokenClassifierServing
    from albert_tf.tasks.token_classification import tagging
    from export_helpers import token_model

    tags = tagging.tag_list(["LOC", "PER"], "iob2")
    model = token_model(30000, tags, crf, 3)
    module = TokenClassifierServing(model, load_tokenizer(cli.SPM, host=False), 12, tags)
    runner = tf.lite.Interpreter(model_content=tflite.convert(module)).get_signature_runner(
        "encoded")
    ids = np.array([[2, 48, 25, 21, 1289, 3] + [0] * 6], np.int32)
    inputs = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
              "padding_mask": (ids != 0).astype(np.int32)}
    got = runner(**inputs)["logits"]
    want = model(inputs, training=False)["logits"].numpy()
    np.testing.assert_allclose(got[0, :6], want[0, :6], atol=1e-4)
