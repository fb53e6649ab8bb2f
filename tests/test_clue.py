"""The CLUE classification tasks (tasks/clue.py): readers, inputs, errors, recipes,
submissions, and a tiny fine-tuning run."""

import json
import os
import shutil

import numpy as np
import pytest

import cli_helpers as cli
from albert_tf import tasks
from albert_tf.tokenizer import HostTokenizer
from albert_tf.training.settings import FinetuneSettings
from conftest import FIXTURES, SHARED
from albert_tf.tasks.sentence_prediction import clue
from albert_tf.tasks.base import Example

OCNLI = os.path.join(FIXTURES, "clue", "ocnli")
NAMES = ["afqmc", "cluewsc2020", "cmnli", "csl", "iflytek", "ocnli", "tnews"]


def _folder(tmp_path, split, *rows):
    """A data folder with `{split}.json` holding `rows` (objects, or raw lines)."""
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows]
    (tmp_path / f"{split}.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(tmp_path)


def _read(name, tmp_path, *rows, split="train"):
    return clue.read_examples(clue.SPECS[name], _folder(tmp_path, split, *rows), split)


def test_every_task_is_registered_with_a_clue_recipe():
    assert set(NAMES) <= set(tasks.names())
    for name in NAMES:
        task = tasks.get(name)
        assert (task.eval_splits, task.test_splits) == (("dev",), ("test",))
        recipe = tasks.declared(name).recipe
        assert "CLUE" in recipe.source and 0 < recipe.warmup_steps < recipe.train_steps
    afqmc, csl = tasks.declared("afqmc").recipe, tasks.declared("csl").recipe
    assert (afqmc.learning_rate, afqmc.batch_size, afqmc.max_seq_length, afqmc.train_steps,
            afqmc.warmup_steps) == (3e-5, 16, 128, 4291, 429)  # int(34,334 / 16 * 2)
    assert (csl.learning_rate, csl.train_steps) == (5e-6, 2500)


def test_label_lists_are_the_baselines():
    specs = clue.SPECS
    assert specs["tnews"].labels == ("100", "101", "102", "103", "104", "106", "107", "108",
                                     "109", "110", "112", "113", "114", "115", "116")
    assert specs["iflytek"].labels == tuple(str(i) for i in range(119))
    assert specs["ocnli"].labels == specs["cmnli"].labels == \
        ("contradiction", "entailment", "neutral")
    assert specs["cluewsc2020"].labels == ("true", "false")
    assert specs["afqmc"].labels == specs["csl"].labels == ("0", "1")


def test_ocnli_fixture_skips_unlabelled_rows():
    spec = clue.SPECS["ocnli"]
    train = clue.read_examples(spec, OCNLI, "train")
    assert len(train) == 14 and train[0] == Example(
        guid="train-1", text_a="现在,我代表国务院,向大会报告政府工作,请予审议,并请全国政协委员提出意见",
        text_b="全国政协委员无权提出建议", label="contradiction")
    assert [e.guid for e in clue.read_examples(spec, OCNLI, "dev")][-1] == "dev-8"
    test = clue.read_examples(spec, OCNLI, "test")
    assert [e.guid for e in test] == ["0", "1", "2", "3", "4", "5"]
    assert all(e.label is None and e.text_b for e in test)


@pytest.mark.shared
def test_reads_the_real_ocnli_sample():
    folder = os.path.join(SHARED, "data", "clue", "ocnli")
    examples = clue.read_examples(clue.SPECS["ocnli"], folder, "train")
    with open(os.path.join(folder, "train.json"), encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    kept = [(i, r) for i, r in enumerate(rows, start=1) if r["label"] != "-"]
    assert (len(rows), len(examples)) == (10000, 9985)
    assert examples == [Example(f"train-{i}", r["sentence1"], r["sentence2"], r["label"])
                        for i, r in kept]


def test_single_text_tasks_and_integer_labels(tmp_path):
    row = {"label": "102", "label_des": "news_entertainment",
           "sentence": "江疏影甜甜圈自拍，迷之角度竟这么好看，美吸引一切事物"}
    assert _read("tnews", tmp_path, row, {**row, "label": 102}) == [
        Example("train-1", row["sentence"], None, "102"),
        Example("train-2", row["sentence"], None, "102")]
    assert _read("iflytek", tmp_path, {"label": 8, "label_des": "公共交通",
                                       "sentence": "闪客蜂是一款地铁快速购票软件。"})[0].label == "8"
    pair = _read("afqmc", tmp_path, {"sentence1": "双十一花呗提额在哪", "sentence2": "里可以提花呗额度",
                                     "label": "0"})[0]
    assert (pair.text_a, pair.text_b, pair.label) == ("双十一花呗提额在哪", "里可以提花呗额度", "0")


def test_csl_joins_the_keywords_with_spaces(tmp_path):
    row = {"id": 1, "abst": "为解决传统均匀FFT波束形成算法引起的3维声呐成像分辨率降低的问题",
           "keyword": ["水声学", "FFT", "波束形成", "3维成像声呐"], "label": "1"}
    assert _read("csl", tmp_path, row)[0] == Example("train-1", "水声学 FFT 波束形成 3维成像声呐",
                                                     row["abst"], "1")


def test_wsc_marks_the_noun_and_the_pronoun(tmp_path):
    text = "为什么要出现一个身穿军装的高大男人？就像一片树叶飘入了树林，他走到了我的家人中间。"
    after = {"target": {"span2_index": 30, "span1_index": 22, "span1_text": "树叶",
                        "span2_text": "他"}, "idx": 0, "label": "false", "text": text}
    before = {"target": {"span1_index": 30, "span2_index": 22, "span1_text": "他",
                         "span2_text": "树叶"}, "idx": 1, "label": "true", "text": text}
    examples = _read("cluewsc2020", tmp_path, after, before)
    assert examples[0].text_a == ("为什么要出现一个身穿军装的高大男人？就像一片_树叶_飘入了树林，[他]走到了"
                                  "我的家人中间。")
    assert examples[1].text_a == ("为什么要出现一个身穿军装的高大男人？就像一片[树叶]飘入了树林，_他_走到了"
                                  "我的家人中间。")
    assert [e.label for e in examples] == ["false", "true"]


def _error(name, tmp_path, *rows, split="train"):
    with pytest.raises((ValueError, FileNotFoundError)) as info:
        _read(name, tmp_path, *rows, split=split)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_bad_input_names_file_line_and_field(tmp_path):
    path = str(tmp_path / "train.json")
    good = {"sentence1": "甲", "sentence2": "乙", "label": "neutral"}
    assert _error("ocnli", tmp_path, good, '{"sentence1": "甲",') == \
        f"{path}:2: not JSON (Expecting property name enclosed in double quotes at column 19)"
    assert _error("ocnli", tmp_path, good, "[1, 2]") == \
        f"{path}:2: expected a JSON object, got an array"
    assert _error("ocnli", tmp_path, good, {"sentence1": "甲", "label": "neutral"}) == \
        f"{path}:2: missing field 'sentence2'"
    assert _error("ocnli", tmp_path, {**good, "sentence2": 3}) == \
        f"{path}:1: field 'sentence2': expected a string, got an integer"
    assert _error("ocnli", tmp_path, {**good, "label": "maybe"}) == \
        f"{path}:1: field 'label': unknown label 'maybe'; allowed: contradiction, entailment, " \
        "neutral"
    assert _error("iflytek", tmp_path, {"sentence": "x", "label": "119"}) == \
        f"{path}:1: field 'label': unknown label '119'; allowed: 0, 1, 2, 3, 4, ..., 118 " \
        "(119 labels)"
    assert _error("afqmc", tmp_path, {"sentence1": "x", "sentence2": "y", "label": True}) == \
        f"{path}:1: field 'label': expected a string, got a boolean"
    assert _error("afqmc", tmp_path, {"sentence1": "x", "sentence2": "y"}) == \
        f"{path}:1: missing field 'label'"
    assert _error("csl", tmp_path, {"abst": "x", "keyword": ["a", 1], "label": "0"}) == \
        f"{path}:1: field 'keyword[1]': expected a string, got an integer"


def test_bad_wsc_spans(tmp_path):
    path = str(tmp_path / "train.json")
    row = {"target": {"span1_index": 0, "span1_text": "小明", "span2_index": 3,
                      "span2_text": "他"}, "label": "true", "text": "小明说他来了"}
    assert _read("cluewsc2020", tmp_path, row)[0].text_a == "_小明_说[他]来了"
    moved = {**row, "target": {**row["target"], "span2_index": 4}}
    assert _error("cluewsc2020", tmp_path, moved) == \
        f"{path}:1: field 'target.span2_text': '他' is not at character 4 of 'text' ('来')"
    overlap = {**row, "target": {**row["target"], "span2_text": "明", "span2_index": 1}}
    assert _error("cluewsc2020", tmp_path, overlap) == \
        f"{path}:1: field 'target': span1 (0, 2) and span2 (1, 2) overlap"
    assert _error("cluewsc2020", tmp_path, {**row, "target": "小明"}) == \
        f"{path}:1: field 'target': expected an object, got a string"


def test_missing_file_and_split(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"afqmc split 'dev': no file .*dev.json"):
        clue.read_examples(clue.SPECS["afqmc"], str(tmp_path), "dev")
    with pytest.raises(ValueError, match="afqmc has no split 'test_matched'; splits: train, "
                                         "dev, test"):
        clue.read_examples(clue.SPECS["afqmc"], str(tmp_path), "test_matched")
    with pytest.raises(ValueError, match="--data_dir is required for task 'afqmc'"):
        tasks.get("afqmc").read(None, "train")


def test_featurize_gives_label_ids_in_the_baselines_order(tmp_path):
    task = tasks.get("cluewsc2020")
    tokenizer = HostTokenizer(cli.SPM)
    settings = FinetuneSettings(task="cluewsc2020", output_dir="x", max_seq_length=24)
    examples = [Example("a", "_x_ [y]", None, "false"), Example("b", "z", None, "true")]
    features = task.featurize(examples, tokenizer, settings, "train")
    assert features.arrays["label"].tolist() == [1, 0]
    assert features.arrays["token_ids"].shape == (2, 24)
    assert "label" not in task.featurize(examples, tokenizer, settings, "test").arrays


def test_submission_is_one_object_a_line(tmp_path):
    spec = clue.SPECS["ocnli"]
    examples = clue.read_examples(spec, OCNLI, "test")
    path = tmp_path / spec.submission("test")
    clue.write_submission(spec, examples, np.array([0, 1, 2, 2, 1, 0]), str(path))
    assert path.read_text(encoding="utf-8").splitlines() == [
        '{"id": 0, "label": "contradiction"}', '{"id": 1, "label": "entailment"}',
        '{"id": 2, "label": "neutral"}', '{"id": 3, "label": "neutral"}',
        '{"id": 4, "label": "entailment"}', '{"id": 5, "label": "contradiction"}']
    with pytest.raises(ValueError, match=r"ocnli: label id 3 is outside \[0, 2\]"):
        clue.write_submission(spec, examples, [0, 1, 2, 3, 0, 0], str(tmp_path / "x.json"))
    with pytest.raises(ValueError, match="6 examples but 1 predictions"):
        clue.write_submission(spec, examples, [0], str(tmp_path / "x.json"))
    assert not (tmp_path / "x.json").exists()


def test_tiny_finetune_evaluates_and_writes_the_submission(tmp_path):
    # The command's program in this process (its flags as the shell gives them);
    # the command as a process: test_finetune_cli.py.
    from albert_tf.commands import finetune

    out = tmp_path / "run"
    cli.run_here(finetune, "--task=ocnli", f"--data_dir={OCNLI}",
                 f"--spm_model={cli.SPM}", f"--model={cli.tiny_model(tmp_path)}",
                 f"--output_dir={out}", "--batch_size=4", "--max_seq_length=48",
                 "--train_steps=6", "--warmup_steps=1", "--learning_rate=1e-3",
                 "--precision=fp32", "--do_predict")
    results = cli.results(out)
    assert results["dev"]["examples"] == 8 and 0 <= results["dev"]["accuracy"] <= 1
    assert results["train"]["step"] == 6
    with open(out / "ocnli_predict.json", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    assert [r["id"] for r in rows] == list(range(6))
    assert {r["label"] for r in rows} <= set(clue.NLI_LABELS)
    assert results["predictions"] == {"test": str(out / "ocnli_predict.json")}


def test_labels_json_names_the_served_labels(tmp_path):
    """TNEWS' labels.json (`label_desc`) beside the data: the model answers
    `news_military`, not "110"; the codes stay in the description."""
    import tensorflow as tf

    import export_helpers as helpers
    from albert_tf.tokenizer.loading import load_tokenizer

    spec = clue.SPECS["tnews"]
    data = tmp_path / "tnews"
    data.mkdir()
    (data / "labels.json").write_text("".join(
        json.dumps({"label": code, "label_desc": f"news_{code}"}, ensure_ascii=False) + "\n"
        for code in spec.labels if code != "116") + '{"label": 110, "label_desc": "news_military"}'
        + "\n", encoding="utf-8")
    names = clue.label_names(spec, str(data))
    assert names[spec.labels.index("110")] == "news_military"
    assert names[spec.labels.index("100")] == "news_100" and names[-1] == "116"  # undescribed
    assert clue.label_names(spec, str(tmp_path)) is None  # no labels.json
    model_dir, task, settings, model = helpers.finetuned_dir(tmp_path / "run", "tnews")
    tokenizer = load_tokenizer(helpers.SPM, host=False)
    module, info = task.serving_module(model, tokenizer, settings.replace(data_dir=str(data)),
                                       model_dir, None)
    assert info["labels"] == list(names) and info["label_codes"] == list(spec.labels)
    assert info["columns"] == {"text": "sentence"}
    out = module.serving_default(text=tf.constant(["军队演习", "球赛"]))
    assert all(label.decode() in names for label in out["label"].numpy())
    assert [names[i] for i in out["label_id"].numpy()] == [x.decode() for x in out["label"].numpy()]
    # The model folder keeps its copy: exported after the data is gone, it still names them.
    from albert_tf.training.run_model import save_finetuned

    kept = str(tmp_path / "kept")
    save_finetuned(model, task, settings.replace(data_dir=str(data)), kept,
                   load_tokenizer(helpers.SPM, host=True))
    assert (tmp_path / "kept" / "labels.json").read_bytes() == (data / "labels.json").read_bytes()
    shutil.rmtree(data)
    _, moved = task.serving_module(model, tokenizer, settings.replace(data_dir=str(data)),
                                   kept, None)
    assert moved["labels"] == list(names) and moved["label_codes"] == list(spec.labels)
