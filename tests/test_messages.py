"""What a run says: each problem once, a warning once per run, a close name suggested."""

import logging

import pytest

import cli_helpers as cli
from albert_tf import tasks
from albert_tf.training.finetuning import Run, build_model, model_config
from albert_tf.training.settings import FinetuneSettings


def test_a_problem_two_splits_share_is_said_once(tmp_path):
    train, dev = tmp_path / "train.csv", tmp_path / "dev.csv"
    train.write_text("text,label\na,x\nb\n")
    dev.write_text("text,label\na,x\n")
    settings = FinetuneSettings(task="text_classification", output_dir=str(tmp_path / "run"),
                                vocab_file=cli.SPM, model=cli.tiny_model(str(tmp_path)),
                                max_seq_length=32, task_options={"train_file": str(train), "eval_file": str(dev)})
    with pytest.raises(ValueError) as error:
        Run(tasks.get("text_classification"), settings)
    assert str(error.value) == f"{train}:3: expected 2 fields (columns text, label), got 1"


def test_the_random_initialisation_warning_is_for_a_new_run_only(tmp_path, caplog):
    settings = FinetuneSettings(task="rte", output_dir="x", model=cli.tiny_model(tmp_path))
    config, _ = model_config(settings, None, 30000)
    with caplog.at_level(logging.WARNING):
        build_model(tasks.get("rte"), settings, "float32", config, None, warn_random=False)
    assert "random initialisation" not in caplog.text
    with caplog.at_level(logging.WARNING):
        build_model(tasks.get("rte"), settings, "float32", config, None)
    assert caplog.text.count("random initialisation") == 1


def test_the_demo_says_it_trains_from_scratch_in_place_of_the_warning(tmp_path):
    from albert_tf.demo.run import DemoRun, describe

    settings = FinetuneSettings(task="rte", output_dir="x", model=cli.tiny_model(tmp_path))
    line = describe("rte", settings)
    assert line.startswith("demo: a small ALBERT (2 shared layers, hidden size 16) trained "
                           "from random weights on generated rte data; no pretrained "
                           "checkpoint, on purpose"), line
    assert "\n" not in line and "--init_checkpoint=" in line
    assert Run.warns_from_scratch and not DemoRun.warns_from_scratch  # (build_model's warn_random)


def test_a_mistyped_task_gets_a_suggestion():
    with pytest.raises(ValueError, match=r"unknown task 'squadv2'; did you mean 'squad_v2'\? "
                                         r"known tasks: "):
        tasks.get("squadv2")
    with pytest.raises(ValueError, match=r"unknown task 'zzz'; known tasks: "):
        tasks.get("zzz")


def test_a_preset_and_its_config_file_follow_one_vocabulary_rule(tmp_path):
    import os
    import shutil

    copied = tmp_path / "student.json"
    shutil.copy(os.path.join(cli.ROOT, "configs", "models", "albert_tiny.json"), copied)
    for model in ("albert_tiny", str(copied)):
        settings = FinetuneSettings(task="rte", output_dir="x", model=model)
        config, problem = model_config(settings, None, 8000)
        assert problem is None and config.vocabulary_size == 8000, model


def test_a_crf_token_classifier_builds_without_a_keras_warning():
    import warnings

    import numpy as np

    from albert_tf.backbone import AlbertBackbone
    from albert_tf.config import AlbertConfig
    from albert_tf.models import AlbertTokenClassifier
    from export_helpers import TINY

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = AlbertTokenClassifier(AlbertBackbone(AlbertConfig(**TINY)), 5, crf=True)
        model({"token_ids": np.ones((2, 7), "int32"), "segment_ids": np.zeros((2, 7), "int32"),
               "padding_mask": np.ones((2, 7), "int32")})
    assert not [w for w in caught if "build()" in str(w.message)]


def test_the_first_serving_run_of_the_demo_hides_onednn_notes_not_errors(capfd):
    import os
    import types

    import tensorflow as tf

    from albert_tf import demo

    class Module:  # what TensorFlow's native code writes on a serving graph's first run
        def serving_default(self, **inputs):
            os.write(2, b"E0000 00:00:1796173727.257224     603 util.cc:131] oneDNN supports "
                        b"DT_INT32 only on platforms with AVX-512. Falling back to the default "
                        b"Eigen-based implementation if present.\n")
            os.write(2, b"E0000 00:00:1796173727.3     603 op_kernel.cc:1] a real failure\n")
            return {"answer": tf.constant([b"parrot"])}

    demo.finish(types.SimpleNamespace(name="squad"), Module())
    out, err = capfd.readouterr()
    assert "answer:   parrot" in out
    assert "a real failure" in err and "DT_INT32" not in err


def test_a_missing_checkpoint_folder_is_named_as_the_flag(tmp_path):
    from albert_tf.training.finetuning import run_tokenizer

    missing = str(tmp_path / "runs" / "pretrain" / "model")
    settings = FinetuneSettings(task="rte", output_dir="x", init_checkpoint=missing)
    with pytest.raises(FileNotFoundError, match=f"^--init_checkpoint={missing}: .*{missing}$"):
        run_tokenizer(settings)


def test_a_config_file_that_is_not_utf8_names_the_flag_and_the_file(tmp_path):
    from albert_tf.commands import finetune

    path = tmp_path / "c.json"
    path.write_bytes(b'{"task": "rte\xf7"}')
    with pytest.raises(ValueError) as e:
        finetune.PROGRAM.settings({"config": str(path)})
    assert str(e.value) == f"--config: {path}: not UTF-8 text (byte 0xf7 at byte 13)"


@pytest.mark.parametrize("call, says", [
    (lambda api: api.load(None), "load(path): path must be a folder's path"),
    (lambda api: api.load(123), "load(path): path must be a folder's path (str or os.PathLike), "
                                "got int 123"),
    (lambda api: api.predict(None, ["a"]), "predict(model): model must be a path"),
])
def test_the_python_api_names_the_argument_it_cannot_take(call, says):
    from albert_tf import api

    with pytest.raises(TypeError) as e:
        call(api)
    assert str(e.value).startswith(says), str(e.value)


def test_predict_none_names_its_argument(tmp_path):
    from albert_tf.commands.predictor import Predictor

    predictor = Predictor.__new__(Predictor)
    predictor.path = str(tmp_path)
    with pytest.raises(TypeError, match=r"predict\(inputs\): inputs must be rows"):
        predictor.predict(None)
