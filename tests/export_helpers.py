"""Fine-tuned `model/` folders of tiny task models, for the export and predict tests.

The weights are random but large (not the near-zero initialisation), so that
logits differ clearly between positions and a decoding mistake changes answers.
"""

import contextlib
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import tasks
from albert_tf.backbone import AlbertBackbone
from albert_tf.config import AlbertConfig
from albert_tf.tokenizer.loading import load_tokenizer
from albert_tf.training.finetuning import save_finetuned
from albert_tf.training.settings import FinetuneSettings
from conftest import FIXTURES
from albert_tf.tasks.base import SplitData
from albert_tf.tasks.sentence_prediction import glue

SPM = os.path.join(FIXTURES, "spm", "albert_30k_clean.model")
SQUAD_OPTIONS = {"doc_stride": 5, "max_query_length": 6, "max_answer_length": 4,
                 "start_n_top": 3, "end_n_top": 4}
# All dimensions differ; the vocabulary is the fixture SentencePiece model's.
TINY = dict(vocabulary_size=30000, num_layers=2, num_heads=2, hidden_dim=6, intermediate_dim=10,
            embedding_dim=4, max_sequence_length=40)


def randomize(model, seed=0, scale=0.7):
    """Large random weights; biases zero (a random head bias would pick one
    label whatever the text)."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        values = rng.normal(0.0, scale, variable.shape)
        if variable.path.endswith(("bias", "beta")):
            values = np.zeros(variable.shape)
        variable.assign(values.astype(variable.dtype))


def settings_for(task_name, output_dir, max_seq_length=19, **options):
    task_options = {}
    if task_name.startswith("squad"):
        task_options = dict(SQUAD_OPTIONS, **options)
    return FinetuneSettings(task=task_name, output_dir=str(output_dir),
                            max_seq_length=max_seq_length, task_options=task_options,
                            dropout=0.0, classifier_dropout=0.0)


def finetuned_dir(output_dir, task_name, seed=0, max_seq_length=19, **options):
    """Writes `<output_dir>/model` as a fine-tuning run would; returns
    `(model_dir, task, settings, model)`."""
    task = tasks.get(task_name)
    settings = settings_for(task_name, output_dir, max_seq_length, **options)
    model = task.build_model(AlbertBackbone(AlbertConfig(**TINY)), settings)
    randomize(model, seed)
    model_dir = os.path.join(str(output_dir), "model")
    save_finetuned(model, task, settings, model_dir, load_tokenizer(SPM, host=True))
    return model_dir, task, settings, model


# -- Exports shared by the test files of one pytest process --------------------
# Exporting traces the tokenizer's large graph (seconds); each export is made
# once per process, in a folder of the session's tmp_path_factory.

_EXPORTS = {}
# Questions whose host null odds choose the squad_v2 export's held-out
# threshold: between two of them, so that some are answered and some not.
THRESHOLD_QUESTIONS = [
    ("Who wrote the book?", "Anna wrote the book in 1990, in Paris, then left."),
    ("When?", "It rained. " * 8),
    ("", "Paris"),
    ("what is ½?", "ﬁve ½ quarters of 12,345 pounds"),
    ("where did she live", "She lived in Paris for ten years before moving to Rome."),
    ("x", "y z"),
]


@contextlib.contextmanager
def kernels_at_any_width():
    """Tiny models' blocks take the fused kernels as real models' do
    (`fused.MIN_HIDDEN_DIM`): an export made inside holds none only because
    exports trace standard ops (`xla_compiled_functions`)."""
    from albert_tf.layers import fused

    previous, fused.MIN_HIDDEN_DIM = fused.MIN_HIDDEN_DIM, 0
    try:
        yield
    finally:
        fused.MIN_HIDDEN_DIM = previous


def exported(tmp_path_factory, task_name):
    """`(version_dir, model_dir, task, settings, model)`: the export of a tiny model.

    Tasks: sst2 (exported with --quantize, so with its model_dynamic_int8.tflite), stsb,
    squad, squad_v2 (with a held-out threshold in the run's eval_results.json,
    chosen from `THRESHOLD_QUESTIONS`).
    """
    from albert_tf.tasks.finetuned import export_model

    if task_name not in _EXPORTS:
        run_dir = tmp_path_factory.mktemp(f"run_{task_name}")
        model_dir, task, settings, model = finetuned_dir(run_dir, task_name)
        if task_name == "squad_v2":
            odds = sorted(host_squad(task, settings, model, THRESHOLD_QUESTIONS)[2].values())
            middle = len(odds) // 2
            write_heldout_threshold(run_dir, (odds[middle - 1] + odds[middle]) / 2)
        with kernels_at_any_width():
            path = export_model(model_dir, str(run_dir / "export"), quantize=task_name == "sst2")
        _EXPORTS[task_name] = (path, model_dir, task, settings, model)
    return _EXPORTS[task_name]


_LOADED = {}


def signature(version_dir, name="serving_default"):
    """A signature of a SavedModel, loaded once per process."""
    if version_dir not in _LOADED:
        _LOADED[version_dir] = tf.saved_model.load(version_dir)
    return _LOADED[version_dir].signatures[name]


def serve(version_dir, **inputs):
    """`serving_default` on lists (or tensors) of inputs -> numpy outputs."""
    outputs = signature(version_dir)(**{k: tf.constant(v) for k, v in inputs.items()})
    return {k: v.numpy() for k, v in outputs.items()}


def op_types(version_dir):
    """Every op type in a SavedModel's graph and its functions."""
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(version_dir, "saved_model.pb"), "rb") as f:
        saved.ParseFromString(f.read())
    graph = saved.meta_graphs[0].graph_def
    return {n.op for n in graph.node} | {n.op for f in graph.library.function
                                         for n in f.node_def}


def xla_compiled_functions(version_dir):
    """The names of a SavedModel's functions marked to be compiled by XLA
    (`_XlaMustCompile`): what TF Serving and the TFLite converter may lack."""
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(version_dir, "saved_model.pb"), "rb") as f:
        saved.ParseFromString(f.read())
    return [f.signature.name for f in saved.meta_graphs[0].graph_def.library.function
            if f.attr["_XlaMustCompile"].b]


def export_info(version_dir):
    from albert_tf.export import INFO_FILE

    with open(os.path.join(version_dir, INFO_FILE), encoding="utf-8") as f:
        return json.load(f)


def write_heldout_threshold(run_dir, threshold):
    with open(os.path.join(str(run_dir), "eval_results.json"), "w") as f:
        json.dump({"dev": {"threshold": threshold,
                           "threshold_source": "held-out training questions"}}, f)


# -- What the host pipeline says -------------------------------------------------

def host_classification(task, settings, model, text_a, text_b=None):
    """The model's logits on the host-packed texts (`tasks.classification.encode_pairs`)."""
    from albert_tf.tokenizer import HostTokenizer
    from albert_tf.tasks.base import Example
    from albert_tf.tasks.long_inputs import encode_pairs

    examples = [Example(str(i), a, None if text_b is None else text_b[i])
                for i, a in enumerate(text_a)]
    arrays, lengths = encode_pairs(examples, HostTokenizer(SPM), settings.max_seq_length)
    arrays["padding_mask"] = (np.arange(settings.max_seq_length)[None] < lengths[:, None])
    inputs = {k: v.astype("int32") for k, v in arrays.items()}
    return np.asarray(model(inputs, training=False)["logits"])


def host_squad(task, settings, model, pairs):
    """`SquadTask.decode` of `(question, context)` pairs: (predictions, nbest, null_odds).

    The windows go through the model in one eager call (the engine's batching
    and distribution are not what is compared here).
    """
    from albert_tf.tokenizer import HostTokenizer
    from albert_tf.tasks.squad.data import SquadExample

    examples = [SquadExample(f"q{i}", q, c) for i, (q, c) in enumerate(pairs)]
    features = task.featurize(examples, HostTokenizer(SPM), settings, "dev")
    arrays = features.arrays
    inputs = {"token_ids": arrays["token_ids"], "segment_ids": arrays["segment_ids"],
              "p_mask": arrays["p_mask"],
              "padding_mask": (np.arange(features.max_seq_length)[None]
                               < features.lengths[:, None]).astype("int32")}
    outputs = {k: np.asarray(v) for k, v in model(inputs, training=False).items()}
    return task.bind(settings).decode(SplitData("dev", examples, features, outputs))


# -- Expected outputs of the exports ---------------------------------------------

def expected_classification(task, settings, model, text_a, text_b=None):
    logits = host_classification(task, settings, model, text_a, text_b)
    if task.is_regression:
        return {"score": logits[:, 0]}
    ids = np.argmax(logits, axis=-1)
    return {"label": [glue.label_name(task.spec, i).encode() for i in ids], "label_id": ids,
            "probabilities": tf.nn.softmax(logits).numpy()}


def assert_outputs_close(got, expected, atol=1e-5):
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        value = np.asarray(value)
        if value.dtype.kind in "OSU":
            assert list(got[name]) == list(value), name
        else:
            np.testing.assert_allclose(got[name], value, atol=atol, err_msg=name)


def expected_squad(fixture, questions, contexts, threshold=None):
    """`{answer, start, end, score[, null_odds, no_answer_probability]}` lists
    from the host pipeline, with the export's no-answer threshold for v2.0
    (or `threshold`)."""
    path, _, task, settings, model = fixture
    predictions, nbest, null_odds = host_squad(task, settings, model, zip(questions, contexts))
    if threshold is None and task.v2:
        threshold = export_info(path)["null_threshold"]
    out = {"answer": [], "start": [], "end": [], "score": []}
    for i in range(len(questions)):
        qid = f"q{i}"
        best = nbest[qid][0] if nbest[qid] else None
        # predictions.json's answer (the served rule) heads the n-best list.
        assert predictions[qid] == (best["text"] if best else ""), qid
        answered = best and not (task.v2 and null_odds[qid] > threshold)
        out["answer"].append(predictions[qid] if answered else "")
        out["start"].append(best["start_char"] if answered else -1)
        out["end"].append(best["end_char"] if answered else -1)
        out["score"].append(sum(v for k, v in best.items() if k.endswith(("_logit", "_log_prob")))
                            if best else -2e6)
    if task.v2:
        out["null_odds"] = [null_odds[f"q{i}"] for i in range(len(questions))]
        out["no_answer_probability"] = list(1 / (1 + np.exp(-np.array(out["null_odds"]))))
    return out


def token_model(vocabulary_size, tags, crf, seed):
    """A tiny random `AlbertTokenClassifier` over `tags` (with a CRF if `crf`)."""
    from albert_tf.models import AlbertTokenClassifier

    config = AlbertConfig(**dict(TINY, vocabulary_size=vocabulary_size))
    model = AlbertTokenClassifier(AlbertBackbone(config), len(tags), dropout=0.0, crf=crf)
    randomize(model, seed)
    if crf:  # gentler transitions, so that emissions still pick tags other than O
        model.crf.transitions.assign(model.crf.transitions * 0.2)
    return model


def assert_refuses_other_shapes(function, **inputs):
    """`function` (a raw-text signature: a loaded one or a concrete function, neither
    of which checks its inputs' shapes) answers `inputs` (one batch of at least 2
    rows) and refuses, naming every input in order, the same inputs with a column
    dimension of size 1 added (`[n]` as `[n, 1]`: each input alone and all of
    them), as one row (`[1, n]`) and as a scalar."""
    arrays = {k: np.asarray(v, dtype=object) for k, v in inputs.items()}
    assert min(len(a) for a in arrays.values()) >= 2
    function(**{k: tf.constant(a, tf.string) for k, a in arrays.items()})
    pattern = "inputs must be one batch: " + ".*".join(arrays)
    names = list(arrays)
    variants = [{n: arrays[n][..., None]} for n in names]
    variants += [{n: arrays[n][..., None] for n in names}, {names[0]: arrays[names[0]][None]},
                 {names[0]: np.asarray(arrays[names[0]].flat[0], dtype=object)}]
    for changed in variants:
        bad = {k: tf.constant(changed.get(k, a), tf.string) for k, a in arrays.items()}
        with pytest.raises(tf.errors.InvalidArgumentError, match=pattern):
            function(**bad)


def chinese_export(folder, task_name, **options):
    """A tiny random model of `task_name` on the Chinese WordPiece vocabulary, exported
    under `folder/export`; returns the version folder."""
    task = tasks.get(task_name)
    settings = FinetuneSettings(task=task_name, output_dir=str(folder), max_seq_length=24,
                                dropout=0.0, classifier_dropout=0.0, task_options=options)
    config = AlbertConfig(**dict(TINY, vocabulary_size=21128))
    model = task.build_model(AlbertBackbone(config), settings)
    randomize(model, seed=3)
    model_dir = os.path.join(str(folder), "model")
    vocab = os.path.join(FIXTURES, "wordpiece", "vocab.txt")
    save_finetuned(model, task, settings, model_dir, load_tokenizer(vocab, host=True))
    from albert_tf.tasks.finetuned import export_model

    return export_model(model_dir, os.path.join(str(folder), "export"))
