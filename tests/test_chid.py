"""CHID: the readers of CLUE's and FewCLUE's files, the baseline's rows, the global
assignment, the metrics and submission files, the served answers; and a tiny
fine-tune -> export -> served answer.

References: the rows of CLUE's baseline (CLUEbenchmark/CLUE
`baselines/models_pytorch/mrc_pytorch/preprocess/CHID_preprocess.py`) written out
by hand for real passages, in tokens of the Chinese WordPiece vocabulary looked up
in the file itself; its window rule (`add_tokens_for_around`, then the other
blanks widened and cut) written as it states it; and score matrices decoded by hand.
"""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import tasks
from albert_tf.backbone import AlbertBackbone
from albert_tf.config import AlbertConfig
from albert_tf.models import AlbertMultipleChoice
from albert_tf.tokenizer.loading import load_tokenizer
from albert_tf.training.settings import FinetuneSettings
from albert_tf.training.task_data import Scoring, SplitData
from conftest import FIXTURES, SHARED
from export_helpers import TINY, randomize
from albert_tf.tasks.chid.data import Blank, read_chid
from albert_tf.tasks.chid.features import encode_blanks
from albert_tf.tasks.chid.task import answers

CHID = os.path.join(FIXTURES, "clue", "chid")
CLUE_DIR, FEWCLUE_DIR = os.path.join(CHID, "clue"), os.path.join(CHID, "fewclue")
WORDPIECE = os.path.join(FIXTURES, "wordpiece", "vocab.txt")
with open(WORDPIECE, encoding="utf-8") as f:
    VOCAB = {line.rstrip("\n"): i for i, line in enumerate(f)}


@pytest.fixture(scope="module")
def host():
    return load_tokenizer(WORDPIECE, host=True)


def ids(tokens):
    """Ids of tokens looked up in the vocabulary file (not through a tokenizer)."""
    return [VOCAB[t] for t in tokens]


def chars(text):
    return list(text)


# -- Reading ------------------------------------------------------------------------

def test_clue_files_give_one_example_a_blank_with_its_answer():
    train = read_chid(CLUE_DIR, "train")
    with open(os.path.join(CLUE_DIR, "train_answer.json"), encoding="utf-8") as f:
        answer = json.load(f)
    assert [b.key for b in train] == [f"#idiom00000{i}#" for i in range(7)]
    assert [b.ordinal for b in train] == [0, 0, 0, 1, 2, 0, 1]  # passages of 1, 1, 3, 2 blanks
    assert [b.label for b in train] == [answer[b.key] for b in train]
    assert {b.group for b in train} == {1} and len({b.passage for b in train}) == 4
    assert train[0].choices[:2] == ("传宗接代", "得过且过") and len(train[0].choices) == 10
    assert all(b.key in b.passage and 0 <= b.label < len(b.choices) for b in train)
    dev = read_chid(CLUE_DIR, "dev")
    assert [b.key for b in dev] == [f"#idiom5771{i}#" for i in range(57, 64)]
    assert [b.label for b in dev] == [5, 1, 4, 3, 6, 7, 9]


def test_fewclue_files_give_one_example_a_line():
    train = read_chid(FEWCLUE_DIR, "train")
    assert len(train) == 24 and [b.group for b in train] == list(range(1, 25))
    assert train[0].key == 24 and train[0].label == 1 and train[0].choices[1] == "谨小慎微"
    assert all(b.layout == "fewclue" and b.passage.count("#idiom#") == 1 and b.ordinal == 0
               and 0 <= b.label < len(b.choices) == 7 for b in train)


@pytest.mark.shared
def test_the_real_fewclue_sets_read_whole():
    for split, name in (("train", "train_few_all.json"), ("dev", "dev_few_all.json")):
        blanks = read_chid(os.path.join(SHARED, "data", "clue", "chid", "fewclue"), split)
        assert len(blanks) == 202 and all(0 <= b.label < len(b.choices) for b in blanks), name


def _clue_line(**changes):
    row = {"candidates": ["一心一意", "三心二意", "四平八稳"],
           "content": ["甲#idiom000001#乙", "丙#idiom000002#丁#idiom000003#"]}
    return json.dumps(dict(row, **changes), ensure_ascii=False)


def _write(folder, name, lines, answers=None):
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    if answers is not None:
        (folder / name.replace(".json", "_answer.json")).write_text(json.dumps(answers))
    return str(path)


ANSWERS = {"#idiom000001#": 0, "#idiom000002#": 2, "#idiom000003#": 1}


@pytest.mark.parametrize("lines, answers, message", [
    (["{"], ANSWERS, r":1: not JSON"),
    ([_clue_line(content=3)], ANSWERS,
     r":1: field 'content': expected a list of passages \(CLUE\) or a string \(FewCLUE\)"),
    ([_clue_line(candidates=["一心一意"])], ANSWERS,
     r":1: field 'candidates': expected at least 2 choices, got 1"),
    ([_clue_line(content=["甲", 5])], ANSWERS, r":1: field 'content\[1\]': expected a string"),
    ([_clue_line()], {"#idiom000001#": 0}, r":1: field 'content\[1\]', blank #idiom000002#: "
                                             r"no answer in .*dev_answer.json"),
    ([_clue_line()], dict(ANSWERS, **{"#idiom000003#": 3}),
     r"blank #idiom000003#: field 'answer': index 3 is out of range for 3 choices"),
    ([_clue_line(), _clue_line()], ANSWERS, r":2: blank #idiom000001# is also on line 1"),
    ([_clue_line(), json.dumps({"candidates": ["甲乙", "丙丁"], "content": "#idiom#",
                                "answer": 0})], ANSWERS,
     r":2: field 'content': a string \(fewclue's format\), but the file's first line is in "
     r"clue's"),
    ([json.dumps({"candidates": ["甲乙", "丙丁"], "content": "无", "answer": 0})], None,
     r":1: field 'content': expected one blank #idiom#, found 0"),
    ([json.dumps({"candidates": ["甲乙", "丙丁"], "content": "#idiom#"})], None,
     r":1: missing field 'answer'"),
    ([_clue_line()], None, r"no answer file .*dev_answer.json"),
])
def test_bad_input_names_the_file_line_field_and_blank(tmp_path, lines, answers, message):
    path = _write(tmp_path / "chid", "dev.json", lines, answers)
    with pytest.raises((ValueError, FileNotFoundError), match=message) as error:
        read_chid(str(tmp_path / "chid"), "dev")
    assert path in str(error.value)


def test_the_test_split_reads_answers_only_where_given(tmp_path):
    folder = tmp_path / "chid"
    _write(folder, "test1.1.json", [_clue_line()])
    _write(folder, "test.json", [json.dumps({"id": 7, "candidates": ["甲乙", "丙丁"],
                                             "content": "#idiom#"})])
    test = read_chid(str(folder), "test")  # CLUE's name first
    assert [b.key for b in test] == list(ANSWERS) and {b.label for b in test} == {None}
    os.remove(folder / "test1.1.json")
    (fewclue,) = read_chid(str(folder), "test")
    assert fewclue.key == 7 and fewclue.label is None and fewclue.layout == "fewclue"
    with pytest.raises(FileNotFoundError, match="chid split 'train': no train.json or "
                                                "train_few_all.json in"):
        read_chid(str(folder), "train")


# -- Rows ---------------------------------------------------------------------------

def _row(arrays, example, choice):
    length = arrays["choice_lengths"][example, choice]
    assert (arrays["segment_ids"][example, choice] == 0).all()  # one segment, as the baseline
    return arrays["token_ids"][example, choice, :length].tolist()


def test_rows_are_the_baselines_on_real_passages(host):
    fewclue = read_chid(FEWCLUE_DIR, "train")[:1]
    arrays, lengths = encode_blanks(fewclue, host, 24)
    # "...大功告成都是由无数个#idiom#累积而来,做好每一件...": 8 ids each side.
    assert _row(arrays, 0, 1) == ids(["[CLS]", *chars("谨小慎微"), "[SEP]", *chars("告成都是由无数个"),
                                      "[unused1]", *chars("累积而来,做好每"), "[SEP]"])
    assert lengths.tolist() == [24] and arrays["token_ids"].shape == (1, 7, 24)

    clue = read_chid(CLUE_DIR, "train")
    arrays, _ = encode_blanks(clue, host, 48)
    # #idiom000004#: 13 ids after it, so 27 before, counting #idiom000003# as one;
    # widened to four [MASK]s, the left side keeps its last 27 ("府难以" drop out).
    assert _row(arrays, 4, 0) == ids(
        ["[CLS]", *chars("传宗接代"), "[SEP]", *chars("重拳刺泡沫，只能"), *["[MASK]"] * 4,
         *chars("，但是泡沫迟早会破的，政府已经"), "[unused1]", *chars("了，投资者是否应该跟随呢！"), "[SEP]"])
    arrays, _ = encode_blanks(clue[2:3], host, 26)
    # #idiom000002#: 9 ids each side, the curly quote rewritten as the baseline does.
    assert _row(arrays, 0, 9) == ids(["[CLS]", *chars("人老珠黄"), "[SEP]", *chars("示房地业的风险，并"),
                                      "[unused1]", *chars("劝说央企地产公司"), '"', "[SEP]"])


def test_a_short_passage_keeps_its_left_where_the_baseline_wraps_around(host):
    blank = Blank("x", "一二三四五#idiom#六", 0, ("甲乙丙丁", "戊己庚辛"), 0, 1)
    arrays, _ = encode_blanks([blank], host, 16)
    # Budget 8: 5 before, 1 after; the baseline's tokens[5 - 7:5] is empty.
    assert _row(arrays, 0, 1) == ids(["[CLS]", *chars("戊己庚辛"), "[SEP]", *chars("一二三四五"),
                                      "[unused1]", "六", "[SEP]"])


def test_a_vocabulary_without_unused1_reads_the_blank_as_its_unknown_token():
    spm = load_tokenizer(os.path.join(FIXTURES, "spm", "albert_30k_clean.model"), host=True)
    assert spm.piece_to_id("[unused1]") == spm.unk_id
    blank = Blank("x", "the cat #idiom# on the mat", 0, ("sat", "ran"), 0, 1)
    arrays, _ = encode_blanks([blank], spm, 16)
    row = _row(arrays, 0, 0)
    at = row.index(spm.unk_id)
    assert row[:at] == [spm.cls_id, *spm.encode("sat"), spm.sep_id, *spm.encode("the cat")]
    assert row[at + 1:] == [*spm.encode(" on the mat"), spm.sep_id]


def reference_rows(tokens, tag, candidate, max_seq_length, mask_width=4):
    """CHID_preprocess.convert_examples_to_features' tokens of one candidate (the
    doc tokens one character or blank each), its left slice clipped at 0."""
    pos = tokens.index(tag)
    num_tokens = max_seq_length - 3 - 5
    num_l, num_r = num_tokens // 2, num_tokens - num_tokens // 2
    after = len(tokens) - 1 - pos
    if pos >= num_l and after >= num_r:
        left, right = tokens[pos - num_l:pos], tokens[pos + 1:pos + 1 + num_r]
    elif pos <= num_l:
        left, right = tokens[:pos], tokens[pos + 1:pos + 1 + num_tokens - pos]
    else:
        right = tokens[pos + 1:]
        left = tokens[max(pos - (num_tokens - len(right)), 0):pos]

    def widened(side):
        return [t for token in side for t in
                (["[MASK]"] * mask_width if token.startswith("#idiom") else [token])]

    kept_left = widened(left)[-len(left):] if left else []
    kept_right = widened(right)[:len(right)]
    return ["[CLS]", *candidate, "[SEP]", *kept_left, "[unused1]", *kept_right, "[SEP]"]


def test_windows_follow_the_baselines_rule_on_random_passages(host):
    rng = np.random.default_rng(5)
    alphabet = list("天地人和风雨山水花鸟日月")
    blanks, expected = [], []
    for line in range(30):
        tokens = [str(c) for c in rng.choice(alphabet, rng.integers(0, 90))]
        count = int(rng.integers(1, 5))
        for k, at in enumerate(sorted(rng.choice(len(tokens) + 1, count))):
            tokens.insert(at + k, f"#idiom{line:03d}{k:03d}#")
        tags = [t for t in tokens if t.startswith("#idiom")]
        for ordinal, tag in enumerate(tags):
            blanks.append(Blank(tag, "".join(tokens), ordinal, ("甲乙丙丁", "戊己"), 0, line))
            expected.append(reference_rows(tokens, tag, list("甲乙丙丁"), 40))
    arrays, _ = encode_blanks(blanks, host, 40)
    for i, tokens in enumerate(expected):
        assert _row(arrays, i, 0) == ids(tokens), i


# -- Answers ------------------------------------------------------------------------

def _scoring(examples, logits, output_dir="."):
    split = SplitData("dev", examples, None, {"logits": np.asarray(logits, np.float32)})
    return Scoring(split, {}, {}, str(output_dir))


def _bound(decoding="global"):
    return tasks.get("chid").bind(FinetuneSettings(task="chid", output_dir="x",
                                                   task_options={"chid_decoding": decoding}))


def test_the_global_assignment_uses_each_idiom_once():
    # b0: c0 5, c1 4; b1: c0 6; b2: c1 3, c2 2. Each blank's argmax: c0, c0, c1.
    # Global: (b1, c0) 6 first; then (b0, c1) 4; then (b2, c2) 2.
    scores = [[5.0, 4.0, 0.0, 0.0], [6.0, 1.0, 0.0, 0.0], [0.0, 3.0, 2.0, 0.0]]
    examples = [Blank(f"b{i}", "p", i, ("甲", "乙", "丙", "丁"), label, 1)
                for i, label in enumerate([1, 0, 2])]
    assert answers(examples, scores, greedy=True).tolist() == [1, 0, 2]
    assert answers(examples, scores, greedy=False).tolist() == [0, 0, 1]
    results = _bound("argmax").evaluate(_scoring(examples, scores))
    assert results["global_accuracy"] == 1.0 and results["argmax_accuracy"] == 1 / 3
    assert results["accuracy"] == 1 / 3 and results["chance_accuracy"] == 0.25
    assert results["blanks"] == 3 and results["passage_groups"] == 1
    assert _bound().evaluate(_scoring(examples, scores))["accuracy"] == 1.0


def test_the_global_assignment_of_a_real_passage_group():
    line = read_chid(CLUE_DIR, "train")  # 7 blanks of one line, 10 idioms
    # Each blank's answer scores 2 and idiom 9 (no answer here) 3 for the first six:
    # argmax answers idiom 9 six times. Globally, of the six equal 3s the lowest
    # blank takes idiom 9 (the baseline's stable order: idiom, then blank), the
    # others then their answers.
    logits = np.zeros((7, 10))
    logits[np.arange(7), [b.label for b in line]] = 2.0
    logits[:6, 9] = 3.0
    assert 9 not in [b.label for b in line]
    assert answers(line, logits, greedy=True).tolist() == [9] + [b.label for b in line[1:]]
    assert answers(line, logits, greedy=False).tolist() == [9] * 6 + [line[6].label]
    results = _bound().evaluate(_scoring(line, logits))
    assert results["global_accuracy"] == 6 / 7 and results["argmax_accuracy"] == 1 / 7


def test_groups_of_more_blanks_than_idioms_and_padded_choices():
    from albert_tf.steps.cloze_decode import answer_blanks

    inf = float("inf")
    # Group 0: three blanks, two idioms; the blank left answers its own best.
    # Group 1: one blank of one idiom, padded to two; group 2: no idiom at all.
    scores = np.array([[[1.0, 0.0], [3.0, 2.0], [2.5, 0.5]],
                       [[-1.0, -inf], [-inf, -inf], [-inf, -inf]],
                       [[-inf, -inf], [-inf, -inf], [-inf, -inf]]], np.float32)
    assert answer_blanks(scores).numpy().tolist() == [[0, 0, 1], [0, -1, -1], [-1, -1, -1]]
    assert answer_blanks(scores, greedy=False).numpy().tolist() == \
        [[0, 0, 0], [0, -1, -1], [-1, -1, -1]]
    assert answer_blanks(np.zeros((2, 0, 3))).shape == (2, 0)


def test_submission_files_are_clues_and_fewclues(tmp_path):
    task = _bound()
    clue = read_chid(CLUE_DIR, "dev")
    logits = np.eye(10)[[b.label for b in clue]]
    path = task.write_predictions(_scoring(clue, logits, tmp_path))
    assert os.path.basename(path) == "chid_predict.json"
    with open(path, encoding="utf-8") as f:
        assert json.load(f) == {b.key: b.label for b in clue}
    fewclue = read_chid(FEWCLUE_DIR, "dev")[:3]
    path = task.write_predictions(_scoring(fewclue, np.eye(7)[[2, 0, 6]], tmp_path))
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    assert os.path.basename(path) == "chidf_predict.json"
    assert rows == [{"id": b.key, "answer": a} for b, a in zip(fewclue, [2, 0, 6])]


# -- Serving ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def served():
    from albert_tf.tasks.chid.serving import ChidServing

    host = load_tokenizer(WORDPIECE, host=True)
    config = AlbertConfig(**dict(TINY, vocabulary_size=host.vocabulary_size))
    model = AlbertMultipleChoice(AlbertBackbone(config), dropout=0.0)
    randomize(model, seed=4)
    return ChidServing(model, load_tokenizer(WORDPIECE), 36, greedy=True), model, host


def test_served_answers_are_the_featurized_rows_decoded(served):
    module, model, host = served
    clue = read_chid(CLUE_DIR, "train")
    passages = list(dict.fromkeys(b.passage for b in clue)) + ["没有空", "#idiom#在前"]
    candidates = [list(clue[0].choices)] * 4 + [["甲乙", "丙丁", ""], ["甲乙", "", ""]]
    width = max(map(len, candidates))
    out = module.serving_default(tf.constant(passages), tf.constant(
        [c + [""] * (width - len(c)) for c in candidates]))
    # The host pipeline: one example a blank, each passage its own group.
    examples = [Blank(b.key, b.passage, b.ordinal, b.choices, None, passages.index(b.passage))
                for b in clue] + [Blank("#idiom#", passages[5], 0, ("甲乙",), None, 5)]
    arrays, _ = encode_blanks(examples, host, 36)
    logits = model({k: tf.constant(v) for k, v in arrays.items()})["logits"].numpy()
    chosen = answers(examples, logits, greedy=True)
    counts = [1, 1, 3, 2, 0, 1]
    assert out["num_blanks"].numpy().tolist() == counts
    index, blank = out["choice_index"].numpy(), out["blank"].numpy()
    probabilities = out["probabilities"].numpy()
    assert index.shape == (6, 3) and probabilities.shape == (6, 3, 10)
    i = 0
    for row, count in enumerate(counts):
        for slot in range(3):
            if slot >= count:
                assert index[row, slot] == -1 and blank[row, slot] == b""
                assert (probabilities[row, slot] == 0).all()
                continue
            assert blank[row, slot].decode() == examples[i].key
            assert index[row, slot] == chosen[i]
            n = len(examples[i].choices)
            expected = np.exp(logits[i, :n] - logits[i, :n].max())
            np.testing.assert_allclose(probabilities[row, slot, :n], expected / expected.sum(),
                                       atol=1e-5)
            i += 1
    assert [t.decode() for t in out["idiom"].numpy()[2]] == [clue[0].choices[k]
                                                             for k in index[2]]


def test_no_blank_no_candidate_and_empty_batches_have_an_answer(served):
    module, _, _ = served
    none = module.serving_default(tf.constant(["无空", "有#idiom#空"]), tf.zeros([2, 0], tf.string))
    assert none["choice_index"].numpy().tolist() == [[-1], [-1]]
    assert none["probabilities"].shape == (2, 1, 0) and none["idiom"].numpy()[1, 0] == b""
    empty = module.serving_default(tf.constant([], tf.string), tf.zeros([0, 2], tf.string))
    assert empty["choice_index"].shape == (0, 0) and empty["num_blanks"].shape == (0,)
    with pytest.raises(tf.errors.InvalidArgumentError, match="passage.*candidates"):
        module.serving_default(tf.constant(["a", "b"]), tf.constant([["甲乙"]]))
    from albert_tf.export.formats.web.bundle import head_settings

    with pytest.raises(ValueError, match="--web: exports of ChidServing have no web decoder"):
        head_settings(module)


# -- End to end -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def finetuned(tmp_path_factory):
    """A tiny model fine-tuned from scratch on CLUE's files (`test1.1.json`: dev's
    line): `(run folder, results)`."""
    import cli_helpers as cli
    from albert_tf.training.finetuning import run

    tmp_path = tmp_path_factory.mktemp("chid")
    data = tmp_path / "data"
    shutil.copytree(CLUE_DIR, data)
    shutil.copy(data / "dev.json", data / "test1.1.json")
    settings = FinetuneSettings(
        task="chid", output_dir=str(tmp_path / "run"), data_dir=str(data), vocab_file=WORDPIECE,
        model=cli.tiny_model(str(tmp_path)), strategy="one_device", precision="fp32",
        learning_rate=1e-3, batch_size=4, train_steps=4, warmup_steps=1, max_seq_length=32,
        do_predict=True)
    return tmp_path / "run", run(tasks.get("chid"), settings, verbose=False)


def test_tiny_finetune_scores_both_decoders_and_writes_the_submission(finetuned):
    _, results = finetuned
    dev = results["dev"]
    assert dev["blanks"] == 7 and dev["passage_groups"] == 1
    assert dev["chance_accuracy"] == pytest.approx(0.1)
    assert dev["accuracy"] == dev["global_accuracy"] and 0 <= dev["argmax_accuracy"] <= 1
    with open(results["predictions"]["test"], encoding="utf-8") as f:
        submission = json.load(f)
    assert sorted(submission) == [f"#idiom5771{i}#" for i in range(57, 64)]
    assert len(set(submission.values())) == 7  # one idiom a blank


def test_the_export_answers_a_passage(finetuned, tmp_path):
    from albert_tf.export.settings import ExportSettings
    from albert_tf.tasks.finetuned import run_export

    run_dir, _ = finetuned
    version = run_export(ExportSettings(model_dir=str(run_dir), export_dir=str(tmp_path),
                                        precision="fp32"))["export_dir"]
    with open(os.path.join(version, "assets.extra", "albert_tf_export.json")) as f:
        info = json.load(f)
    assert info["inputs"] == ["passage", "candidates"] and info["decoding"] == "global"
    dev_line = read_chid(CLUE_DIR, "dev")
    serve = tf.saved_model.load(version).signatures["serving_default"]
    out = serve(passage=tf.constant([dev_line[4].passage]),
                candidates=tf.constant([list(dev_line[4].choices)]))
    count = out["num_blanks"].numpy()[0]
    idioms = [t.decode() for t in out["idiom"].numpy()[0, :count]]
    assert [t.decode() for t in out["blank"].numpy()[0]] == [b.key for b in dev_line
                                                             if b.passage == dev_line[4].passage]
    assert set(idioms) <= set(dev_line[4].choices) and len(set(idioms)) == count


@pytest.mark.slow  # two commands in fresh processes
def test_the_commands_finetune_and_predict_a_passage(tmp_path):
    import cli_helpers as cli

    data = tmp_path / "data"
    shutil.copytree(FEWCLUE_DIR, data)
    out = tmp_path / "run"
    trained = cli.run("albert_tf.finetune", "--task=chid", f"--data_dir={data}",
                      f"--vocab_file={WORDPIECE}", f"--model={cli.tiny_model(tmp_path)}",
                      f"--output_dir={out}", "--batch_size=4", "--max_seq_length=32",
                      "--train_steps=6", "--warmup_steps=1", "--learning_rate=1e-3",
                      "--precision=fp32", "--chid_decoding=argmax", "--export")
    assert trained.returncode == 0, trained.stderr[-3000:]
    dev = cli.results(out)["dev"]
    assert dev["blanks"] == 24 and dev["accuracy"] == dev["argmax_accuracy"]
    row = {"passage": "他做事总是#idiom#，从不马虎。", "candidates": ["一丝不苟", "马马虎虎"]}
    answer = cli.run("albert_tf.predict", f"--model={out / 'export'}",
                     input=json.dumps(dict(row, id=3)) + "\n")
    assert answer.returncode == 0, answer.stderr[-3000:]
    printed = json.loads(answer.stdout)
    assert printed["id"] == 3 and printed["blank"] == ["#idiom#"]
    assert printed["idiom"][0] in row["candidates"] and printed["num_blanks"] == 1
