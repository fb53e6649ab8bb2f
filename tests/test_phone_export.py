"""The phone formats: the metadata read back with the schema, the model run on raw text.

The model is run here with TensorFlow's interpreter on ids from the host tokenizer;
MediaPipe's and the Task Library's own runs (their tokenizers on the device
vocabulary) are the slow tier's (test_mobile_runtimes.py).
"""

import numpy as np
import pytest

import export_helpers as helpers
from albert_tf.export.formats import Job, entry
from albert_tf.export.formats.phone import metadata, writing
from albert_tf.export.formats.phone import metadata_schema as schema
from albert_tf.export.formats.tflite.convert import _interpreter_class
from albert_tf.tasks import finetuned
from albert_tf.tokenizer.loading import load_tokenizer

TEXTS = ["A gorgeous, witty film.", "Ça n'a AUCUN intérêt... 12,345 times ``dull''", "ok"]


@pytest.fixture(scope="module")
def sst2(tmp_path_factory):
    """`(version_dir, model_dir, module, {variant: written path and description})`."""
    path, model_dir, *_ = helpers.exported(tmp_path_factory, "sst2")
    module, _ = finetuned.build_serving_module(model_dir)
    out = tmp_path_factory.mktemp("phone")
    written = {}
    for spelling, write in (("mediapipe", writing.write_classifier),
                            ("mediapipe_embedder", writing.write_embedder)):
        item = entry(spelling)
        target = str(out / item.path)
        written[spelling] = (target, write(Job(module, model_dir=model_dir), item.variant,
                                           target))
    return path, model_dir, module, written


def _read(target):
    with open(target, "rb") as f:
        return metadata.read(f.read())


def test_classifier_metadata_reads_back(sst2):
    _, model_dir, module, written = sst2
    target, described = written["mediapipe"]
    found, files = _read(target)
    assert found.minParserVersion == b"1.1.0"
    (graph,) = found.subgraphMetadata
    # In the model's input order, each named as the runtimes look it up.
    with open(target, "rb") as f:
        order = metadata.input_names(f.read())
    runtime_names = {"serving_default_input_word_ids:0": b"ids",
                     "serving_default_input_mask:0": b"mask",
                     "serving_default_input_type_ids:0": b"segment_ids"}
    assert [t.name for t in graph.inputTensorMetadata] == [runtime_names[n] for n in order]
    (unit,) = graph.inputProcessUnits
    assert unit.optionsType == schema.ProcessUnitOptions.SentencePieceTokenizerOptions
    (model_file,) = unit.options.sentencePieceModel
    assert model_file.name == b"spiece.model"
    (output,) = graph.outputTensorMetadata
    (labels,) = output.associatedFiles
    assert labels.type == schema.AssociatedFileType.TENSOR_AXIS_LABELS
    assert files[labels.name.decode()].decode().splitlines() == list(module.labels)
    assert sorted(files) == described["files"] == ["labels.txt", "spiece.model"]
    # The tokenizer's file is a SentencePiece model of the same pieces.
    import sentencepiece

    device = sentencepiece.SentencePieceProcessor(model_proto=files["spiece.model"])
    assert device.vocab_size() == load_tokenizer(model_dir, host=True).vocab.size


def test_embedder_metadata_has_no_labels(sst2):
    target, _ = sst2[3]["mediapipe_embedder"]
    found, files = _read(target)
    (output,) = found.subgraphMetadata[0].outputTensorMetadata
    assert output.name == b"embedding" and not output.associatedFiles
    assert sorted(files) == ["spiece.model"]


def _packed(tokenizer, text, length):
    ids = [tokenizer.cls_id] + tokenizer.encode(text)[:length - 2] + [tokenizer.sep_id]
    pad = length - len(ids)
    return {"input_word_ids": np.array([ids + [0] * pad], np.int32),
            "input_mask": np.array([[1] * len(ids) + [0] * pad], np.int32),
            "input_type_ids": np.zeros((1, length), np.int32)}


def test_classifier_gives_the_saved_models_probabilities(sst2):
    path, model_dir, module, written = sst2
    interpreter = _interpreter_class()(model_path=written["mediapipe"][0])
    details = {d["name"]: d for d in interpreter.get_input_details()}
    assert sorted(details) == ["serving_default_input_mask:0",
                               "serving_default_input_type_ids:0",
                               "serving_default_input_word_ids:0"]
    runner = interpreter.get_signature_runner("serving_default")
    tokenizer = load_tokenizer(model_dir, host=True)
    expected = helpers.signature(path)(text=np.array(TEXTS))["probabilities"].numpy()
    for text, want in zip(TEXTS, expected):
        got = runner(**_packed(tokenizer, text, module.max_seq_length))["scores"]
        np.testing.assert_allclose(got[0], want, atol=1e-5)


def test_mediapipe_refuses_a_pair_classifier(tmp_path_factory):
    _, model_dir, *_ = helpers.exported(tmp_path_factory, "squad")
    module, _ = finetuned.build_serving_module(model_dir)
    with pytest.raises(ValueError, match="formats: mediapipe is for one-text classifiers"):
        entry("mediapipe").format.prepare(module)


def test_device_sentencepiece_model_gives_albert_ids(spm_tokenizer):
    """The stock SentencePiece tokenizer on the device model gives the host tokenizer's
    ids on raw text (the digit-comma rule included)."""
    import json
    import os

    import sentencepiece

    from conftest import FIXTURES
    from albert_tf.tokenizer.sentencepiece import device

    host = load_tokenizer(os.path.join(FIXTURES, "spm", "albert_30k_clean.model"), host=True)
    stock = sentencepiece.SentencePieceProcessor(model_proto=device.device_model(host))
    with open(os.path.join(FIXTURES, "spm", "tokenization_reference.jsonl")) as f:
        texts = [json.loads(line)["text"] for line in f]
    texts += ["  Ça n'a AUCUN\tintérêt\u3000``dull'' ﬁve ½ Crème BRÛLÉE İstanbul ΣΊΣΥΦΟΣ x",
              "naïve CAFÉ\u00a0e\u0301", "''quoted'' ```three", "$1,250,000 or 3,5, x9,"]
    rule = [t for t in texts if host.encode(t) != host._sp.encode(host.preprocess(t))]
    assert len(rule) >= 2  # texts the digit-comma rule changes
    assert [t for t in texts if stock.encode(t) != host.encode(t)] == []


def test_device_wordpiece_vocabulary_names_every_id():
    import os

    from conftest import FIXTURES
    from albert_tf.tokenizer.base import get_type

    host = load_tokenizer(os.path.join(FIXTURES, "wordpiece", "vocab.txt"), host=True)
    kind, name, content = get_type("wordpiece").device_vocabulary(host)
    lines = content.decode("utf-8").split("\n")[:-1]
    assert (kind, name, len(lines)) == ("bert", "vocab.txt", host.vocab.size)
    for index, line in enumerate(lines):  # one token a line, each at its id
        assert line.strip() == line and line, (index, line)
        if host.vocab.tokens[index].strip():
            assert line == host.vocab.tokens[index]


@pytest.mark.parametrize("runtime", ["mediapipe", "litert"])
def test_api_load_runs_the_file_without_tensorflow(sst2, runtime):
    """`api.load(".../mediapipe/model.tflite").predict(texts)` in a process where
    TensorFlow cannot be imported gives the SavedModel's answers."""
    import json
    import subprocess
    import sys

    path, _, _, written = sst2
    blocked = ["tensorflow"] + (["mediapipe"] if runtime == "litert" else [])
    script = (f"import sys, json\nfor name in {blocked!r}: sys.modules[name] = None\n"
              "from albert_tf import api\n"
              f"model = api.load({written['mediapipe'][0]!r})\n"
              f"print(json.dumps([model.info['runtime'], api.predict(model, {TEXTS!r})]))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    used, answers = json.loads(done.stdout.strip().splitlines()[-1])
    assert used == runtime
    expected = helpers.signature(path)(text=np.array(TEXTS))
    assert [a["label"] for a in answers] == [v.decode() for v in expected["label"].numpy()]
    np.testing.assert_allclose([a["probabilities"] for a in answers],
                               expected["probabilities"].numpy(), atol=1e-5)


def test_task_library_qa_model_and_metadata(tmp_path_factory):
    path, model_dir, *_ = helpers.exported(tmp_path_factory, "squad")
    module, _ = finetuned.build_serving_module(model_dir)
    target = str(tmp_path_factory.mktemp("qa") / "model.tflite")
    entry("task_library_qa").format.prepare(module)
    writing.write_question_answerer(Job(module, model_dir=model_dir), "float32", target)
    with open(target, "rb") as f:
        content = f.read()
    found, files = metadata.read(content)
    (graph,) = found.subgraphMetadata
    assert [t.name.decode() for t in graph.inputTensorMetadata] == \
        metadata.signature_names(content)
    assert [t.name.decode() for t in graph.outputTensorMetadata] == \
        metadata.signature_names(content, outputs=True)
    assert sorted(metadata.signature_names(content, outputs=True)) == ["end_logits",
                                                                       "start_logits"]
    assert sorted(files) == ["spiece.model"]
    # The logits are the SavedModel's encoded outputs, all but the context masked.
    length = module.max_seq_length
    rng = np.random.default_rng(3)
    ids = rng.integers(5, 30000, (1, length)).astype(np.int32)
    mask = (np.arange(length) < length - 4).astype(np.int32)[None]
    segments = (np.arange(length) > 6).astype(np.int32)[None]
    runner = _interpreter_class()(model_content=content).get_signature_runner("serving_default")
    got = runner(ids=ids, mask=mask, segment_ids=segments)
    expected = helpers.signature(path, "encoded")(
        token_ids=ids, padding_mask=mask, segment_ids=segments, p_mask=1 - segments * mask)
    for name in ("start_logits", "end_logits"):
        np.testing.assert_allclose(got[name], expected[name].numpy(), atol=1e-4)


def test_readable_label_names_from_a_clue_labels_file(sst2, tmp_path):
    """CLUE's labels.json (as TNEWS ships it: label and label_desc a line) names the
    labels the runtime shows; a file missing one of the model's labels is refused."""
    from albert_tf.export.formats.phone import PhoneOptions

    _, model_dir, module, _ = sst2
    labels = tmp_path / "labels.json"
    labels.write_text('{"label": "0", "label_desc": "negative"}\n'
                      '{"label": "1", "label_desc": "positive"}\n', encoding="utf-8")
    job = Job(module, PhoneOptions(mediapipe_label_names=str(labels)), model_dir)
    assert writing.label_names(job) == ["negative", "positive"]
    labels.write_text('{"0": "negative"}', encoding="utf-8")
    with pytest.raises(ValueError, match="names no label '1'"):
        writing.label_names(job)
