"""Distillation runs: the loss mix, the teacher cache, init from the teacher, the result folder."""

import json
import os

import numpy as np
import pytest

import cli_helpers as cli
from albert_tf import tasks
from albert_tf.backbone import AlbertBackbone
from albert_tf.data import Features
from albert_tf.distillation import teacher_cache
from albert_tf.distillation.distiller import Distiller, LossWeights
from albert_tf.distillation.run import DistillationRun, distill, init_from_teacher
from albert_tf.distillation.settings import DistillSettings
from albert_tf.models import AlbertClassifier, AlbertTokenClassifier
from albert_tf.training.finetuning import run as finetune
from albert_tf.training.settings import FinetuneSettings
from helpers import tiny_config, tiny_inputs
from albert_tf.tasks.finetuned import load_finetuned

WORDS = ("the cat dog sat ran on a mat big small house tree river stone quick slow red "
         "blue old new").split()


def _rte_folder(folder, count=24):
    """An RTE-layout folder of generated pairs (label: whether the pair shares its first word)."""
    rng = np.random.default_rng(0)
    os.makedirs(folder, exist_ok=True)
    for split, n in (("train", count), ("dev", 8)):
        lines = ["index\tsentence1\tsentence2\tlabel"]
        for i in range(n):
            a = " ".join(rng.choice(WORDS, 6))
            same = i % 2 == 0
            b = (a.split()[0] if same else "stone") + " " + " ".join(rng.choice(WORDS, 4))
            lines.append(f"{i}\t{a}\t{b}\t{'entailment' if same else 'not_entailment'}")
        with open(os.path.join(folder, f"{split}.tsv"), "w") as f:
            f.write("\n".join(lines) + "\n")
    return str(folder)


@pytest.fixture(scope="module")
def teacher(tmp_path_factory):
    """(data folder, teacher run folder, its results): a tiny RTE teacher."""
    root = tmp_path_factory.mktemp("teacher")
    data = _rte_folder(root / "data")
    settings = FinetuneSettings(
        task="rte", output_dir=str(root / "run"), data_dir=data, vocab_file=cli.SPM,
        model=cli.tiny_model(str(root)), strategy="one_device", precision="fp32",
        learning_rate=1e-3, batch_size=4, train_steps=10, warmup_steps=1, max_seq_length=32)
    results = finetune(tasks.get("rte"), settings, verbose=False)
    return data, str(root / "run" / "model"), results


def _distill(teacher, output_dir, student_model, **changes):
    data, teacher_dir, _ = teacher
    values = dict(task="rte", output_dir=str(output_dir), data_dir=data, teacher=teacher_dir,
                  student="tiny", model=student_model, strategy="one_device", precision="fp32",
                  learning_rate=1e-3, batch_size=4, train_steps=6, warmup_steps=1,
                  max_seq_length=32, seed=7)
    values.update(changes)
    settings = DistillSettings(**values)

    def load_teacher():
        return load_finetuned(teacher_dir)[2]

    return distill(tasks.get("rte"), settings, load_teacher, verbose=False)


def _weights(model_dir):
    from safetensors.numpy import load_file

    return load_file(os.path.join(model_dir, "model.safetensors"))


# Two students trained (~9 s of CPU); the cache's shards and resumption: below.
@pytest.mark.slow
def test_cached_teacher_outputs_train_the_same_student_as_the_teacher_run_online(
        teacher, tmp_path):
    student = cli.tiny_model(str(tmp_path))
    cached = _distill(teacher, tmp_path / "cached", student)
    online = _distill(teacher, tmp_path / "online", student, cache_teacher=False)
    assert cached["train"]["distillation"]["teacher_outputs"] == "cached"
    assert online["train"]["distillation"]["teacher_outputs"] == "online"
    shards = os.listdir(tmp_path / "cached" / "teacher")
    assert len(shards) == 1 and not os.path.exists(tmp_path / "online" / "teacher")
    a, b = _weights(tmp_path / "cached" / "model"), _weights(tmp_path / "online" / "model")
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_allclose(a[name], b[name], atol=1e-5, err_msg=name)
    # The teacher's own metrics are reported beside the student's.
    # The task's metrics ("loss", the evaluation loss, is reported for the student's
    # own evaluation and the teacher's own run, not for the teacher within distill).
    assert cached["teacher"]["dev"] == {k: v for k, v in teacher[2]["dev"].items()
                                        if k != "loss"}
    assert set(cached["dev"]) == set(teacher[2]["dev"])


def test_the_student_folder_is_an_ordinary_fine_tuned_model(teacher, tmp_path):
    student = cli.tiny_model(str(tmp_path))
    results = _distill(teacher, tmp_path / "run", student, hidden_weight=1.0,
                       attention_weight=1.0, layer_map="0:0,2:2")
    assert results["train"]["distillation"]["layer_map"] == [[0, 0], [2, 2]]
    task, settings, model, _ = load_finetuned(str(tmp_path / "run" / "model"))
    assert task.name == "rte" and type(settings) is FinetuneSettings
    assert settings.max_seq_length == 32 and isinstance(model, AlbertClassifier)
    # The training checkpoints hold the student, not the teacher.
    import tensorflow as tf

    saved = {name for name, _ in tf.train.list_variables(
        tf.train.latest_checkpoint(str(tmp_path / "run" / "checkpoints")))}
    assert not any("teacher" in name for name in saved)


def test_a_killed_teacher_pass_resumes_at_the_first_missing_shard(tmp_path, monkeypatch):
    model = AlbertClassifier(AlbertBackbone(tiny_config()), num_classes=3)
    inputs = tiny_inputs(batch=5)
    features = Features({"token_ids": inputs["token_ids"], "segment_ids": inputs["segment_ids"],
                         "label": np.zeros(5, np.int32)},
                        inputs["padding_mask"].sum(axis=1), label_keys=("label",))
    import tensorflow as tf
    from albert_tf.training import engine

    strategy = tf.distribute.get_strategy()
    calls = []
    predict = engine.predict
    monkeypatch.setattr(engine, "predict", lambda *a, **k: calls.append(len(a[2])) or
                        predict(*a, **k))
    first = teacher_cache.teacher_outputs(model, strategy, features, ("logits",), str(tmp_path),
                                          2, lambda lengths: 7, shard_size=2, verbose=False)
    assert calls == [2, 2, 1] and sorted(os.listdir(tmp_path)) == [
        "shard-00000.npz", "shard-00001.npz", "shard-00002.npz"]
    os.remove(tmp_path / "shard-00001.npz")
    again = teacher_cache.teacher_outputs(model, strategy, features, ("logits",), str(tmp_path),
                                          2, lambda lengths: 7, shard_size=2, verbose=False)
    assert calls == [2, 2, 1, 2]
    np.testing.assert_array_equal(first["logits"], again["logits"])
    direct = model(inputs, training=False)["logits"].numpy()
    np.testing.assert_allclose(first["logits"], direct, atol=1e-6)
    # Ctrl-C in the pass: one line saying what is kept; the written shards stay.
    os.remove(tmp_path / "shard-00002.npz")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(engine, "predict", interrupted)
    from albert_tf.errors import RunStopped

    with pytest.raises(RunStopped, match=r"teacher's pass over the training examples \(2 of 3 "
                       r"shards of 2 kept in .*\); run the same command again"):
        teacher_cache.teacher_outputs(model, strategy, features, ("logits",), str(tmp_path), 2,
                                      lambda lengths: 7, shard_size=2, verbose=False)
    assert len(os.listdir(tmp_path)) == 2


def test_loss_is_the_weighted_sum_of_its_parts():
    student = AlbertClassifier(AlbertBackbone(tiny_config(num_layers=2)), num_classes=3)
    teacher = AlbertClassifier(AlbertBackbone(tiny_config(hidden_dim=8)), num_classes=3)
    mix = LossWeights(hard=0.3, soft=0.7, temperature=3.0)
    distiller = Distiller(student, teacher, mix)
    inputs = tiny_inputs()
    labels = np.array([0, 2, 1], np.int32)
    teacher_logits = teacher(inputs, training=False)["logits"].numpy()
    y_pred = distiller(inputs, training=False)
    loss = distiller.compute_loss(inputs, {"label": labels, "teacher_logits": teacher_logits},
                                  y_pred).numpy()
    s = y_pred["logits"].numpy().astype(np.float64)
    log_q = s - np.log(np.exp(s).sum(-1, keepdims=True))
    hard = -np.mean(log_q[np.arange(3), labels])
    tt, st = teacher_logits / 3.0, s / 3.0
    log_pt = tt - np.log(np.exp(tt).sum(-1, keepdims=True))
    log_ps = st - np.log(np.exp(st).sum(-1, keepdims=True))
    soft = 9.0 * np.mean(np.sum(np.exp(log_pt) * (log_pt - log_ps), -1))
    assert loss == pytest.approx(0.3 * hard + 0.7 * soft, rel=1e-5)


def test_token_soft_targets_read_only_the_labelled_tokens():
    student = AlbertTokenClassifier(AlbertBackbone(tiny_config()), num_tags=4)
    distiller = Distiller(student, student, LossWeights(hard=0.0, soft=1.0, temperature=1.0))
    inputs = tiny_inputs()
    labels = np.full((3, 7), -100, np.int32)
    labels[0, 1], labels[2, 3] = 2, 0
    teacher_logits = np.random.default_rng(1).normal(0, 3, (3, 7, 4)).astype(np.float32)
    wild = teacher_logits.copy()
    wild[labels == -100] = 1e3  # untagged tokens: whatever the teacher says there is unread
    y_pred = distiller(inputs, training=False)
    loss = distiller.compute_loss(inputs, {"label": labels, "teacher_logits": wild},
                                  y_pred).numpy()
    s, t = y_pred["logits"].numpy(), teacher_logits
    rows = []
    for b, p in ((0, 1), (2, 3)):
        log_p = t[b, p] - np.log(np.exp(t[b, p]).sum())
        log_q = s[b, p] - np.log(np.exp(s[b, p]).sum())
        rows.append(np.sum(np.exp(log_p) * (log_p - log_q)))
    assert loss == pytest.approx(np.mean(rows), rel=1e-4)


def test_intermediate_losses_need_matching_heads_and_a_distillable_head():
    from albert_tf.models import AlbertBeamQA

    student = AlbertClassifier(AlbertBackbone(tiny_config()), num_classes=2)
    teacher = AlbertClassifier(AlbertBackbone(tiny_config(num_heads=4, hidden_dim=8)),
                               num_classes=2)
    with pytest.raises(ValueError, match="the student has 2 heads, the teacher 4"):
        Distiller(student, teacher, LossWeights(attention=1.0, layer_map=((1, 1),)))
    beam = AlbertBeamQA(AlbertBackbone(tiny_config()))
    with pytest.raises(ValueError, match="the beam head has no outputs a student can learn"):
        Distiller(beam, beam, LossWeights())


def test_hidden_loss_projects_a_narrower_student():
    student = AlbertClassifier(AlbertBackbone(tiny_config(num_layers=1)), num_classes=2)
    teacher = AlbertClassifier(AlbertBackbone(tiny_config(hidden_dim=8)), num_classes=2)
    mix = LossWeights(hard=0.0, soft=0.0, hidden=1.0, layer_map=((0, 0), (1, 3)))
    distiller = Distiller(student, teacher, mix)
    inputs = tiny_inputs()
    y_pred = distiller(inputs, training=False)
    loss = distiller.compute_loss(inputs, {"label": np.zeros(3, np.int32)}, y_pred).numpy()
    teacher_states = teacher.backbone.hidden_states(inputs)
    student_states = student.backbone.hidden_states(inputs)
    kernel, bias = (w.numpy() for w in distiller.projection.weights)
    mask = inputs["padding_mask"].astype(bool)
    want = sum(np.mean(((student_states[s].numpy() @ kernel + bias)
                        - teacher_states[t].numpy())[mask] ** 2) for s, t in ((0, 0), (1, 3)))
    assert loss == pytest.approx(want, rel=1e-4)
    # Trained: the student and the projection; never the teacher.
    names = {v.path for v in distiller.trainable_variables}
    assert "hidden_projection/kernel" in names
    assert len(distiller.trainable_variables) == len(student.trainable_variables) + 2


def test_init_from_teacher_copies_what_fits():
    teacher = AlbertClassifier(AlbertBackbone(tiny_config(sharing="none")), num_classes=2)
    # Another embedding width, one shared block: embeddings' tables differ, blocks fit.
    student = AlbertClassifier(AlbertBackbone(tiny_config(num_layers=2, embedding_dim=5)),
                               num_classes=2)
    copied, skipped = init_from_teacher(student, teacher)
    assert "embeddings/token_embedding/embeddings" in skipped
    assert "embeddings/projection/kernel" in skipped
    assert "attention_0/query/kernel" in copied and "classifier/kernel" in copied
    values = {v.path: v.numpy() for v in teacher.weights}
    for v in student.weights:
        if v.path in copied:
            np.testing.assert_array_equal(v.numpy(), values[v.path], err_msg=v.path)
    # A student block the teacher lacks starts from the teacher's first.
    wide = AlbertClassifier(AlbertBackbone(tiny_config(sharing="none", num_layers=4)),
                            num_classes=2)
    small = AlbertClassifier(AlbertBackbone(tiny_config()), num_classes=2)
    init_from_teacher(wide, small)
    np.testing.assert_array_equal(
        {v.path: v for v in wide.weights}["attention_3/query/kernel"].numpy(),
        {v.path: v for v in small.weights}["attention_0/query/kernel"].numpy())


def test_per_token_teacher_arrays_are_cut_to_the_batch_length():
    tokens = np.arange(12, dtype=np.int32).reshape(2, 6)
    features = Features({"token_ids": tokens}, np.array([3, 6])).with_arrays(
        {"teacher_logits": np.ones((2, 6, 4), np.float32)})
    assert features.label_keys == ("teacher_logits",) and features.is_token_level(
        "teacher_logits")
    assert features.batch([1, 0], 4)["teacher_logits"].shape == (2, 4, 4)
    assert features.signature()["teacher_logits"].shape.as_list() == [None, None, 4]


@pytest.mark.slow
def test_distill_cli_end_to_end_and_its_errors(teacher, tmp_path):
    data, teacher_dir, _ = teacher
    student = cli.tiny_model(str(tmp_path))
    out = tmp_path / "student"
    args = [f"--teacher={os.path.dirname(teacher_dir)}", f"--student={student}",
            f"--output_dir={out}", "--train_steps=4", "--precision=fp32", "--log_every=2"]
    result = cli.run("albert_tf.distill", *args)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "teacher dev: accuracy=" in result.stdout and "student / teacher on dev" in \
        result.stdout
    saved = json.loads((out / "settings.json").read_text())
    assert saved["data_dir"] == data and saved["max_seq_length"] == 32  # the teacher's
    assert saved["warmup_steps"] == 0  # the teacher's 1 of 10 steps, for 4 steps
    again = cli.run("albert_tf.distill", f"--output_dir={out}")
    assert f"{out}: this run is complete" in again.stdout
    predicted = cli.run("albert_tf.predict", f"--model={out}/model", "--text_a=the cat sat",
                        "--text_b=the dog ran")
    assert predicted.returncode == 0, predicted.stderr[-3000:]
    assert json.loads(predicted.stdout.strip().splitlines()[-1])["label"] in (
        "entailment", "not_entailment")
    line = cli.one_line_error(cli.run("albert_tf.distill", *args[:2], "--task=mrpc",
                                      f"--output_dir={tmp_path}/x"))
    assert line == "error: --task=mrpc: the teacher was fine-tuned on 'rte'; a student learns " \
                   "the teacher's task"
    line = cli.one_line_error(cli.run("albert_tf.distill", *args[:2], "--temperature=0",
                                      f"--output_dir={tmp_path}/y"))
    assert line == "error: flags: temperature must be > 0, got 0.0"


@pytest.mark.slow
def test_the_distill_function_equals_the_command(teacher, tmp_path):
    from albert_tf.commands import api

    _, teacher_dir, _ = teacher
    values = {"teacher": os.path.dirname(teacher_dir), "student": cli.tiny_model(str(tmp_path)),
              "train_steps": 4, "precision": "fp32", "log_every": 2}
    result = cli.run("albert_tf.distill", f"--output_dir={tmp_path / 'shell'}",
                     *[f"--{k}={v}" for k, v in values.items()])
    assert result.returncode == 0, result.stderr[-3000:]
    results = api.distill(output_dir=str(tmp_path / "python"), **values)
    shell = json.loads((tmp_path / "shell" / "eval_results.json").read_text())
    for key in ("dev", "teacher"):
        assert results[key] == shell[key], key
    assert results["train"]["step"] == shell["train"]["step"] == 4
