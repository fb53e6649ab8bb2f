import numpy as np
import pytest

from albert_tf import tasks
from albert_tf.tokenizer import HostTokenizer
from albert_tf.training.settings import FinetuneSettings
from cli_helpers import RTE, SPM


@pytest.fixture(scope="module")
def tokenizer():
    return HostTokenizer(SPM)


def test_every_glue_task_is_registered_with_its_recipe():
    assert tasks.names() == ["afqmc", "c3", "chid", "cluewsc2020", "cmnli", "cmrc2018", "cola",
                             "csl", "iflytek", "mnli", "mrpc", "multiple_choice", "ocnli",
                             "qnli", "qqp", "race", "rte", "squad", "squad_v2", "sst2", "stsb",
                             "text_classification", "text_regression", "tnews",
                             "token_classification", "wnli"]
    for name in tasks.names():  # every task has its recipe
        assert tasks.get(name).recipe.train_steps > 0
    assert tasks.get("mnli").eval_splits == ("dev_matched", "dev_mismatched")
    assert tasks.get("rte").recipe.train_steps == 800


def test_every_declared_task_is_the_one_its_module_registers():
    # (the names, options and recipes the commands read without importing the modules)
    declared = tasks.declarations()  # the task type folders' light __init__s
    registered = tasks.REGISTRY.entries()  # every declared module imported
    assert sorted(registered) == sorted(declared) == tasks.names()
    for name, declaration in declared.items():
        task = registered[name]
        assert type(task).__module__ == declaration.module
        assert task.options_class is declaration.options_class, name
        assert task.export_options_class is declaration.export_options_class, name
        assert task.recipe == declaration.recipe and \
            task.scratch_recipe == declaration.scratch_recipe
    assert tasks.declared("rte") is registered["rte"]  # once registered, the task itself


def test_featurize_packs_pairs_and_labels(tokenizer):
    task = tasks.get("rte")
    settings = FinetuneSettings(task="rte", output_dir="x", max_seq_length=48)
    examples = task.read_examples(RTE, "train")
    features = task.featurize(examples, tokenizer, settings, "train")
    ids = features.arrays["token_ids"]
    assert ids.shape == (len(examples), 48)
    a, b = tokenizer.encode(examples[0].text_a), tokenizer.encode(examples[0].text_b)
    expected = [tokenizer.cls_id, *a, tokenizer.sep_id, *b, tokenizer.sep_id]
    assert list(ids[0, :len(expected)]) == expected
    assert list(features.arrays["segment_ids"][0, :len(expected)]) == \
        [0] * (len(a) + 2) + [1] * (len(b) + 1)
    assert features.label_keys == ("label",)
    assert list(features.arrays["label"]) == [0, 1]  # entailment, not_entailment
    assert features.lengths[0] == int((ids[0] != tokenizer.pad_id).sum())
    test = task.featurize(task.read_examples(RTE, "test"), tokenizer, settings, "test")
    assert "label" not in test.arrays


def test_recompute_setting_reaches_the_model(tmp_path):
    from albert_tf.training.finetuning import build_model, model_config
    from cli_helpers import tiny_model

    settings = FinetuneSettings(task="rte", output_dir="x", model=tiny_model(tmp_path),
                                recompute=True)
    config, _ = model_config(settings, None, 30000)
    model = build_model(tasks.get("rte"), settings, "float32", config, None)
    assert model.backbone.encoder.recompute
    assert not build_model(tasks.get("rte"), settings.replace(recompute=False), "float32",
                           config, None).backbone.encoder.recompute


def test_stsb_is_regression_with_one_output():
    from albert_tf.backbone import AlbertBackbone
    from helpers import tiny_config

    task = tasks.get("stsb")
    model = task.build_model(AlbertBackbone(tiny_config()),
                             FinetuneSettings(task="stsb", output_dir="x"))
    assert model.num_classes == 1 and model.is_regression
    assert task.predictions({"logits": np.array([[2.5], [0.5]])}).tolist() == [2.5, 0.5]
