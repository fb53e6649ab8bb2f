"""The CMRC 2018 task (tasks/cmrc2018.py): reading, answer placement, options, windows,
and a tiny fine-tuning run checked against the official evaluation of its files."""

import json
import logging
import os
import shutil

import numpy as np
import pytest

import cli_helpers as cli
from albert_tf import tasks
from albert_tf.tokenizer import HostTokenizer
from albert_tf.training.settings import FinetuneSettings
from conftest import FIXTURES, SHARED
from albert_tf.tasks.squad.cmrc2018 import place_answer, read_cmrc2018, training_examples
from albert_tf.tasks.squad.options import Cmrc2018Options
from albert_tf.tasks.squad.data import SquadExample

CMRC = os.path.join(FIXTURES, "clue", "cmrc2018")


def _example(context, *answers):
    return SquadExample(qid="q", question="?", context=context, answers=tuple(answers))


def test_place_answer():
    context = "北京大学在北京。北京是首都。"
    assert place_answer(context, "北京大学", 0) == (0, 4)
    assert place_answer("甲 北京大学", " 北京大学", 1) == (2, 6)  # the file's stray space
    assert place_answer(context, "北京", 6) == (5, 7)             # the nearest occurrence
    assert place_answer(context, "北京", 10) == (8, 10)
    assert place_answer("北京甲乙北京", "北京", 2) == (0, 2)       # a tie: the earlier one
    assert place_answer("北京甲乙北京", "北京", 3) == (4, 6)
    assert place_answer(context, "北京", -1) == (0, 2)            # unplaced: the first
    assert place_answer(context, "上海", 0) is None
    assert place_answer(context, " ", -1) is None


def test_training_examples_place_one_answer_or_skip(caplog):
    examples = [_example("甲乙丙丁", ("乙丙", 1)),                  # where it says
                _example("甲乙丙丁", ("戊", -1), ("丙丁", -1)),     # a later answer, found
                _example("甲乙丙丁", ("戊", 0), ("己", -1)),        # nowhere: skipped
                _example("甲乙丙丁", ("丁", 1))]                    # not at 1: found at 3
    kept, moved, skipped = training_examples(examples)
    assert [e.answers for e in kept] == [(("乙丙", 1),), (("丙丁", 2),), (("丁", 3),)]
    assert (moved, skipped) == (2, 1)

    task = tasks.get("cmrc2018")
    settings = FinetuneSettings(task="cmrc2018", output_dir="x", max_seq_length=24,
                                task_options={"max_query_length": 8})
    with caplog.at_level(logging.INFO, logger="albert_tf.tasks.squad.cmrc2018"):
        features = task.featurize(examples, HostTokenizer(cli.SPM), settings, "train")
    assert "cmrc2018 train: 2 of 4 questions train on an answer placed away from their " \
        "first answer_start; 1 skipped (no answer text in the context)" in caplog.text
    assert set(features.arrays["question_index"].tolist()) == {0, 1, 2}


def test_reads_the_fixtures_with_unplaced_answers():
    train = read_cmrc2018(os.path.join(CMRC, "train.json"))
    dev = read_cmrc2018(os.path.join(CMRC, "dev.json"))
    assert (len(train), len(dev)) == (22, 15)
    assert train[0].qid == "TRIAL_154_QUERY_0" and train[0].title == "尤金袋鼠"
    assert train[0].answers == (("尤金袋鼠分布在澳洲南部岛屿及西岸地区", 52),)
    assert all(len(e.answers) == 3 for e in dev)
    assert sum(start == -1 for e in dev for _, start in e.answers) == 6
    kept, moved, skipped = training_examples(train)
    assert (len(kept), moved, skipped) == (22, 5, 0)  # TRIAL_210's five
    located = {e.qid: e.answers[0] for e in kept if e.qid.startswith("TRIAL_210")}
    assert located["TRIAL_210_QUERY_0"] == ("俗名龙尖", 13)


@pytest.mark.shared
def test_reads_the_real_trial_set():
    path = os.path.join(SHARED, "data", "clue", "cmrc2018", "trial.json")
    examples = read_cmrc2018(path)
    with open(path, encoding="utf-8") as f:
        data = json.load(f)["data"]
    expected = [SquadExample(qid=q["id"], question=q["question"], context=p["context"],
                             answers=tuple((a["text"], a["answer_start"]) for a in q["answers"]),
                             title=article["title"])
                for article in data for p in article["paragraphs"] for q in p["qas"]]
    assert len(examples) == 1002 and examples == expected
    kept, moved, skipped = training_examples(examples)
    assert (len(kept), moved, skipped) == (1002, 5, 0)


def _write(tmp_path, content):
    path = tmp_path / "dev.json"
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    path.write_text(text, encoding="utf-8")
    return str(path)


def _data(qa):
    return {"data": [{"title": "t", "paragraphs": [{"context": "甲乙", "qas": [qa]}]}]}


@pytest.mark.parametrize("content,message", [
    ('{"data": [}', r"dev.json:1:11: invalid JSON"),
    ({"data": {}}, r"dev.json: not a SQuAD file"),
    (_data({"id": "q", "answers": []}),
     r"dev.json: data\[0\].paragraphs\[0\].qas\[0\]: missing field 'question'"),
    (_data({"id": "q", "question": "?", "answers": [{"text": "甲", "answer_start": "0"}]}),
     r"qas\[0\].answers\[0\].answer_start: expected an integer, got a string"),
    (_data({"id": "q", "question": "?", "answers": [{"text": "甲", "answer_start": -2}]}),
     r"qas\[0\].answers\[0\].answer_start: expected -1 or more, got -2"),
    ({"data": [{"paragraphs": [{"context": "甲", "qas": [{"id": "q", "question": "?"}] * 2}]}]},
     r"qas\[1\].id: 'q' is already used by data\[0\].paragraphs\[0\].qas\[0\]"),
])
def test_bad_input_names_the_file_and_field(tmp_path, content, message):
    with pytest.raises(ValueError, match=message) as info:
        read_cmrc2018(_write(tmp_path, content))
    assert "\n" not in str(info.value)


def test_splits_and_files(tmp_path):
    task = tasks.get("cmrc2018")
    assert (task.eval_splits, task.test_splits) == (("dev",), ("test",))
    with pytest.raises(ValueError, match="task 'cmrc2018' has no split 'heldout'"):
        task.read_examples(CMRC, "heldout")
    with pytest.raises(FileNotFoundError, match=r"cmrc2018 split 'trial': no file .*trial.json"):
        task.read_examples(str(tmp_path), "trial")
    assert len(task.read_examples(CMRC, "dev")) == 15


def test_options_default_to_clues_and_the_span_head():
    task = tasks.get("cmrc2018")
    options = task.options(FinetuneSettings(task="cmrc2018", output_dir="x"))
    assert isinstance(options, Cmrc2018Options)
    assert (options.max_answer_length, options.doc_stride, options.max_query_length,
            options.n_best_size, options.qa_head) == (50, 128, 64, 20, "span")
    with pytest.raises(ValueError, match=r"qa_head must be span for cmrc2018 \(every question "
                                         r"has an answer\), got 'beam'"):
        task.options(FinetuneSettings(task="cmrc2018", output_dir="x",
                                      task_options={"qa_head": "beam"}))
    assert task.recipe.max_seq_length == 512 and "CLUE" in task.recipe.source


def test_training_windows_label_the_located_answer():
    task = tasks.get("cmrc2018")
    tokenizer = HostTokenizer(cli.SPM)
    settings = FinetuneSettings(task="cmrc2018", output_dir="x", max_seq_length=64,
                                task_options={"doc_stride": 24, "max_query_length": 16})
    examples = read_cmrc2018(os.path.join(CMRC, "train.json"))
    features = task.featurize(examples, tokenizer, settings, "train")
    arrays = features.arrays
    kept, _, _ = training_examples(examples)
    answered = np.flatnonzero(arrays["is_impossible"] == 0)
    assert answered.size > 0
    for row in answered:  # every labelled span overlaps the placed answer's characters
        text, start = kept[arrays["question_index"][row]].answers[0]
        first = arrays["token_start_char"][row, arrays["start_positions"][row]]
        last = arrays["token_end_char"][row, arrays["end_positions"][row]]
        assert first < start + len(text) and last > start
    assert features.label_keys == ("start_positions", "end_positions", "is_impossible")


# A command run (~11 s of CPU); squad_v2's, the same path, stays in the default tier.
@pytest.mark.slow
def test_tiny_finetune_matches_the_official_evaluation_of_its_files(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for split in ("train", "dev"):
        shutil.copy(os.path.join(CMRC, f"{split}.json"), data / f"{split}.json")
    with open(os.path.join(CMRC, "dev.json"), encoding="utf-8") as f:
        test = json.load(f)
    for article in test["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                del qa["answers"]
    (data / "test.json").write_text(json.dumps(test, ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "run"
    result = cli.run("albert_tf.finetune", "--task=cmrc2018", f"--data_dir={data}",
                     f"--spm_model={cli.SPM}", f"--model={cli.tiny_model(tmp_path)}",
                     f"--output_dir={out}", "--train_steps=6", "--warmup_steps=1",
                     "--batch_size=4", "--max_seq_length=64", "--doc_stride=24",
                     "--max_query_length=16", "--precision=fp32", "--do_predict")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "cmrc2018 train: 5 of 22 questions train on an answer placed away" in result.stderr
    dev = cli.results(out)["dev"]
    official = cli.run("albert_tf.tasks.squad.cmrc2018_evaluate", str(data / "dev.json"),
                       str(out / "predictions.json"))
    assert official.returncode == 0, official.stderr
    printed = json.loads(official.stdout)
    assert printed == {"AVERAGE": "%.3f" % dev["average"], "F1": "%.3f" % dev["f1"],
                       "EM": "%.3f" % dev["em"], "TOTAL": 15, "SKIP": 0,
                       "FILE": str(out / "predictions.json")}
    assert dev["questions"] == 15 and os.path.isfile(out / "nbest_predictions.json")
    with open(out / "cmrc2018_predict.json", encoding="utf-8") as f:
        submission = json.load(f)
    assert sorted(submission) == sorted(e.qid for e in read_cmrc2018(str(data / "dev.json")))
    assert all(isinstance(text, str) for text in submission.values())
