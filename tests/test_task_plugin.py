"""A new task type is one folder: `tests/plugin_tasks/toy_question/` defines one (is a
sentence a question?) with its own options, export option, head, serving form, raw
input and web decoder, and the library and the commands fine-tune, export, serve and
predict with it, touching nothing in albert_tf/ or tasks/.

Its data is JSON lines of `{"sentence", "question"}`; its serving signature takes
`sentence` and returns `is_question` and `probability`.
"""

import json
import os

import pytest
import tensorflow as tf

import cli_helpers as cli
from albert_tf import tasks
from albert_tf.export.exporter import INFO_FILE
from albert_tf.tasks import TASK_PATH_ENV
from albert_tf.tasks.finetuned import run_export
from albert_tf.training.finetuning import run
from albert_tf.training.settings import FinetuneSettings

PLUGINS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugin_tasks")
SENTENCES = ["Where is the station?", "The station is near.", "Who wrote this book?",
             "She wrote a book.", "Is it raining?", "It rains today.", "What time is it?",
             "It is late."]


@pytest.fixture
def toy():
    """The toy task, its folder on the registry's search path for one test."""
    with tasks.task_path(PLUGINS):
        yield tasks.get("toy_question")


def write_data(folder):
    folder.mkdir()
    for split in ("train", "dev"):
        with open(folder / f"{split}.jsonl", "w", encoding="utf-8") as f:
            for sentence in SENTENCES:
                f.write(json.dumps({"sentence": sentence, "question": sentence.endswith("?")})
                        + "\n")
    return str(folder)


def test_a_task_type_folder_finetunes_exports_and_predicts(tmp_path, toy):
    task = toy
    assert type(task).__module__ == "albert_tf.tasks.toy_question.task"
    # Its options and export options are the commands' flags, without its module.
    assert any("min_words" in c.field_names() for c in tasks.option_classes())
    assert any("min_probability" in c.field_names() for c in tasks.export_option_classes())
    settings = FinetuneSettings(task=task.name, output_dir=str(tmp_path / "run"),
                                data_dir=write_data(tmp_path / "data"), vocab_file=cli.SPM,
                                model=cli.tiny_model(str(tmp_path)), strategy="one_device",
                                precision="fp32", task_options={"min_words": 4},
                                **{k: getattr(task.recipe, k) for k in (
                                    "learning_rate", "batch_size", "train_steps",
                                    "warmup_steps", "max_seq_length")})
    results = run(task, settings, verbose=False)
    assert results["train"]["step"] == 6 and results["dev"]["examples"] == 5  # of 4+ words

    from albert_tf.export.settings import ExportSettings

    version = run_export(ExportSettings(
        model_dir=str(tmp_path / "run"), export_dir=str(tmp_path / "export"),
        precision="fp32", task_options={"min_probability": 0.25}))["export_dir"]
    with open(os.path.join(version, INFO_FILE), encoding="utf-8") as f:
        info = json.load(f)
    assert info["inputs"] == ["sentence"] and info["min_probability"] == 0.25
    loaded = tf.saved_model.load(version)
    served = loaded.signatures["serving_default"](sentence=tf.constant(SENTENCES[:2]))
    assert served["is_question"].dtype == tf.bool and served["probability"].shape == (2,)
    assert (served["is_question"].numpy() == (served["probability"].numpy() >= 0.25)).all()

    # The predict command knows nothing of the task: it feeds the inputs the export names.
    answer = cli.run("albert_tf.predict", f"--model={tmp_path / 'export'}",
                     input='{"id": 7, "sentence": "Is this a question?"}\n')
    assert answer.returncode == 0, answer.stderr[-2000:]
    row = json.loads(answer.stdout)
    assert set(row) == {"row", "id", "is_question", "probability"} and 0 <= row["probability"] <= 1


def test_an_unknown_task_says_where_task_types_are_found():
    with pytest.raises(ValueError, match=f"unknown task 'toy_questoin'.*{TASK_PATH_ENV}"):
        tasks.declared("toy_questoin")


@pytest.mark.slow  # four commands, a server and an export for the browser (~1 min)
def test_the_commands_finetune_export_serve_and_predict_a_task_type_folder(tmp_path):
    from serve_helpers import Server

    env = {TASK_PATH_ENV: PLUGINS}
    trained = cli.run("albert_tf.finetune", "--task=toy_question", "--min_words=4",
                      f"--data_dir={write_data(tmp_path / 'data')}", f"--vocab_file={cli.SPM}",
                      f"--model={cli.tiny_model(str(tmp_path))}", "--precision=fp32",
                      f"--output_dir={tmp_path / 'run'}", **env)
    assert trained.returncode == 0, trained.stderr[-3000:]
    exported = cli.run("albert_tf.export", f"--model_dir={tmp_path / 'run'}",
                       f"--export_dir={tmp_path / 'export'}", "--min_probability=0.25",
                       "--precision=fp32", "--formats=web", **env)
    assert exported.returncode == 0, exported.stderr[-3000:]
    web = tmp_path / "export" / "1" / "web"
    with open(web / "head.json", encoding="utf-8") as f:
        assert json.load(f)["min_probability"] == 0.25
    assert (web / "decoder.js").read_text(encoding="utf-8") == open(
        os.path.join(PLUGINS, "toy_question", "web_decoder.js"), encoding="utf-8").read()
    # The export serves without the task's folder: the SavedModel holds it all.
    server = Server(str(tmp_path / "export"), name="toy")
    try:
        status, answer = server.predict({"instances": [{"sentence": "Is it late?"}]})
    finally:
        server.stop()
    assert status == 200, answer
    (prediction,) = answer["predictions"]
    assert set(prediction) == {"is_question", "probability"}
