"""GLUE readers, metrics dispatch, submissions and recipes (tasks/glue.py).

The fixtures in tests/fixtures/glue are tiny files in each task's exact
layout (invented sentences): MRPC train/dev start with a byte-order mark,
quotes are literal (some unbalanced), CoLA train/dev have no header, MNLI has
its full column set with the gold label last.
"""

import os
import re

import numpy as np
import pytest
from conftest import FIXTURES, SHARED
from scipy.stats import pearsonr
from sklearn.metrics import f1_score, matthews_corrcoef

from albert_tf.tasks.sentence_prediction import glue
from albert_tf import tasks
from albert_tf.tasks.base import Example

GLUE_FIXTURES = os.path.join(FIXTURES, "glue")
E = Example

EXPECTED = {
    ("cola", "train"): [E("train-1", 'She called it "the best day" of her life.', None, "1"),
                        E("train-2", "Book the was on table the.", None, "0"),
                        E("train-3", 'Which "book did you read?', None, "1")],
    ("cola", "dev"): [E("dev-1", "Him gave me it.", None, "0"),
                      E("dev-2", "He gave it to me.", None, "1")],
    ("cola", "test"): [E("0", 'Who did "Kim" see?'), E("1", "Kim saw Lee.")],
    ("sst2", "train"): [E("train-2", 'a " charming " surprise ', None, "1"),
                        E("train-3", "dull , dull , dull ", None, "0")],
    ("sst2", "dev"): [E("dev-2", "it never quite lands . ", None, "0"),
                      E("dev-3", "a small gem ", None, "1")],
    ("sst2", "test"): [E("0", "the plot 's \" twist \" is obvious ."), E("1", "warm and funny .")],
    ("mrpc", "train"): [
        E("train-2", 'The firm said " no comment " on Monday .',
          'On Monday the firm said " no comment " .', "1"),
        E("train-3", "Shares fell 3 % to $ 12.50 .", 'He said " we will grow .', "0")],
    ("mrpc", "dev"): [E("dev-2", "The vote was 5-4 .", "The court ruled on Tuesday .", "0"),
                      E("dev-3", "Rain fell all day .", "It rained the whole day .", "1")],
    ("mrpc", "test"): [E("0", 'Officials called it " routine " .',
                         "It was routine , officials said ."),
                       E("1", "Sales rose .", "Sales went up .")],
    ("stsb", "train"): [E("train-2", "A dog runs.", "A dog is running.", 4.75),
                        E("train-3", 'He said "no".', "A cat sleeps.", 0.0)],
    ("stsb", "dev"): [E("dev-2", "Is it safe?", "Is it secure?", 3.8),
                      E("dev-3", "A man cooks.", "A man is cooking.", 5.0)],
    ("stsb", "test"): [E("0", "Stocks fell.", 'Stocks "tumbled".'),
                       E("1", "Two kids play.", "Kids are playing.")],
    ("qqp", "train"): [E("train-2", 'What does "ok" mean?', "What is the meaning of ok?", "1"),
                       E("train-3", "How do I learn Go?", "Is Go hard?", "0")],
    ("qqp", "dev"): [E("dev-2", "Why is the sky blue?", "Why is the sea blue?", "0"),
                     E("dev-3", "How old is Rome?", "What is the age of Rome?", "1")],
    ("qqp", "test"): [E("0", "Is tea good?", 'Is "green" tea healthy?'),
                      E("1", "Who won?", "Who was the winner?")],
    ("mnli", "train"): [E("train-2", 'He said "maybe" .', "He was unsure .", "neutral"),
                        E("train-3", "The door was open .", "The door was shut .",
                          "contradiction")],
    ("mnli", "dev_matched"): [E("dev_matched-2", "Taxes rose .", "Taxes went up .", "entailment")],
    ("mnli", "dev_mismatched"): [E("dev_mismatched-2", 'Call me " later " .', "Never call me .",
                                   "contradiction")],
    ("mnli", "test_matched"): [E("0", "The inn is old .", "The inn is new .")],
    ("mnli", "test_mismatched"): [E("0", "Please give .", "Donate now .")],
    ("qnli", "train"): [E("train-2", 'Who wrote "Emma"?', "Emma was written by Jane Austen.",
                          "entailment"),
                        E("train-3", "When did it rain?", "The sun was out.", "not_entailment")],
    ("qnli", "dev"): [E("dev-2", "What is H2O?", "H2O is water.", "entailment")],
    ("qnli", "test"): [E("0", "Where is Oslo?", "Oslo is in Norway.")],
    ("rte", "train"): [E("train-2", 'The "Blue" team won the cup in 1999.', "The Blue team won.",
                         "entailment"),
                       E("train-3", "Ann moved to Lyon.", "Ann lives in Paris.", "not_entailment")],
    ("rte", "dev"): [E("dev-2", "Prices doubled last year.", "Prices fell.", "not_entailment")],
    ("rte", "test"): [E("0", "Bo sings.", "Bo can sing."), E("1", "Al left.", "Al stayed.")],
    ("wnli", "train"): [E("train-2", "The cup did not fit in the box because it was big.",
                          "The cup was big.", "1"),
                        E("train-3", "Sam thanked Kim because he helped.", "Sam helped.", "0")],
    ("wnli", "dev"): [E("dev-2", 'Jo told Mo "you won".', "Mo won.", "1")],
    ("wnli", "test"): [E("0", "The ball hit the vase and it broke.", "The vase broke.")],
}


def fixture_dir(spec):
    return os.path.join(GLUE_FIXTURES, spec.folder)


def test_table_covers_the_nine_tasks_and_every_split_has_a_fixture():
    assert sorted(glue.SPECS) == sorted(
        ["cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte", "wnli"])
    assert sorted(EXPECTED) == sorted((n, s) for n, spec in glue.SPECS.items() for s in spec.files)


@pytest.mark.parametrize("name,split", sorted(EXPECTED))
def test_reads_fixture_in_the_tasks_layout(name, split):
    spec = glue.get_spec(name)
    assert glue.read_examples(spec, fixture_dir(spec), split) == EXPECTED[name, split]


def test_spec_fields_of_mnli_and_stsb():
    mnli, stsb = glue.get_spec("mnli"), glue.get_spec("stsb")
    assert mnli.eval_splits == ("dev_matched", "dev_mismatched")
    assert dict(mnli.test_splits) == {"test_matched": "MNLI-m.tsv",
                                      "test_mismatched": "MNLI-mm.tsv"}
    assert stsb.labels is None and glue.primary_metric(stsb) == "pearson"
    assert [glue.submission_name(s, t) for s in glue.SPECS.values() for t in s.test_splits] == [
        "CoLA.tsv", "SST-2.tsv", "MRPC.tsv", "STS-B.tsv", "QQP.tsv", "MNLI-m.tsv", "MNLI-mm.tsv",
        "QNLI.tsv", "RTE.tsv", "WNLI.tsv"]
    with pytest.raises(TypeError):  # the table is shared: rows cannot be edited in place
        mnli.files["train"] = "other.tsv"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def at(path, line):
    """The regex of an error's "<file>:<line>:" prefix."""
    return re.escape(f"{path}:{line}:")


def test_missing_file_names_path_and_split(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"split 'dev_mismatched'.*dev_mismatched\.tsv"):
        glue.read_examples(glue.get_spec("mnli"), str(tmp_path), "dev_mismatched")


def test_short_row_names_file_line_and_expected_columns(tmp_path):
    path = write(tmp_path, "train.tsv", "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
                 "1\t1\t2\ta .\tb .\n0\t3\tc .\n")
    with pytest.raises(ValueError, match=at(path, 3) + " expected at least 5 tab-separated "
                                         "columns, got 3"):
        glue.read_examples(glue.get_spec("mrpc"), str(tmp_path), "train")


def test_blank_line_is_a_malformed_row(tmp_path):
    path = write(tmp_path, "dev.tsv", "index\tsentence1\tsentence2\tlabel\n\n"
                 "0\ta\tb\tentailment\n")
    with pytest.raises(ValueError, match=at(path, 2) + " expected at least 4 .* got 1"):
        glue.read_examples(glue.get_spec("rte"), str(tmp_path), "dev")


def test_unknown_label_names_file_line_and_allowed_labels(tmp_path):
    path = write(tmp_path, "train.tsv", "index\tsentence1\tsentence2\tlabel\n"
                 "0\ta\tb\tentailment\n1\tc\td\tneutral\n")
    with pytest.raises(ValueError, match=at(path, 3) + " unknown label 'neutral'; "
                                         "allowed: entailment, not_entailment"):
        glue.read_examples(glue.get_spec("rte"), str(tmp_path), "train")


def test_bad_score_names_file_and_line(tmp_path):
    row = "0\tg\tf\ty\t0\tn\tn\ta\tb\t{}\n"
    path = write(tmp_path, "dev.tsv", "header\t" * 9 + "score\n" + row.format("nan"))
    with pytest.raises(ValueError, match=at(path, 2) + " expected a finite float score, got 'nan'"):
        glue.read_examples(glue.get_spec("stsb"), str(tmp_path), "dev")


def test_non_utf8_line_is_named(tmp_path):
    path = write(tmp_path, "test.tsv", b"index\tsentence\n0\tok\n1\tcaf\xe9\n")
    with pytest.raises(ValueError, match=at(path, 3) + " not UTF-8"):
        glue.read_examples(glue.get_spec("sst2"), str(tmp_path), "test")


def test_empty_test_id_is_rejected(tmp_path):
    path = write(tmp_path, "test.tsv", "index\tsentence\n\tno id\n")
    with pytest.raises(ValueError, match=at(path, 2) + " empty id in column 1"):
        glue.read_examples(glue.get_spec("cola"), str(tmp_path), "test")


def test_windows_line_ends_and_quotes_spanning_lines(tmp_path):
    # A CSV reader with quoting on would join these two rows into one field.
    write(tmp_path, "train.tsv", 'sentence\tlabel\r\n" opens here \t1\r\ncloses here "\t0\r\n')
    got = glue.read_examples(glue.get_spec("sst2"), str(tmp_path), "train")
    assert got == [E("train-2", '" opens here ', None, "1"),
                   E("train-3", 'closes here "', None, "0")]


def test_unknown_task_split_and_bad_spec_are_named():
    with pytest.raises(ValueError, match="unknown GLUE task 'sst5'; known: cola, mnli"):
        glue.get_spec("sst5")
    with pytest.raises(ValueError, match="mnli has no split 'dev'; splits: train, dev_matched"):
        glue.read_examples(glue.get_spec("mnli"), GLUE_FIXTURES, "dev")
    row = dict(labelled=glue.Columns(2, text_a=0, label=1), test=glue.Columns(2, guid=0, text_a=1),
               labels=("0", "1"), test_splits={"test": "X.tsv"})
    with pytest.raises(ValueError, match="GlueSpec 'x': primary: 'f1' is not one of metrics"):
        glue.GlueSpec("x", "X", metrics=("accuracy",), primary="f1", **row)
    with pytest.raises(ValueError, match="Columns.label=5 is outside a row of 2 columns"):
        glue.Columns(2, text_a=0, label=5)


def test_a_new_task_is_one_row(tmp_path):
    spec = glue.GlueSpec("sst5", "SST-5", labelled=glue.Columns(2, text_a=0, label=1, header=False),
                         test=glue.Columns(2, guid=0, text_a=1),
                         labels=("0", "1", "2", "3", "4"), metrics=("accuracy",),
                         primary="accuracy", test_splits={"test": "SST-5.tsv"})
    # No header, so a byte-order mark would land in the first sentence if kept.
    write(tmp_path, "dev.tsv", "\ufefffine .\t2\ngreat !\t4\n")
    examples = glue.read_examples(spec, str(tmp_path), "dev")
    assert examples == [E("dev-1", "fine .", None, "2"), E("dev-2", "great !", None, "4")]
    ids = [glue.label_id(spec, e.label) for e in examples]
    assert ids == [2, 4]
    assert glue.compute_metrics(spec, ids, [2, 3]) == {"accuracy": 0.5}


def test_label_ids_round_trip_in_reference_order():
    mnli = glue.get_spec("mnli")
    assert [glue.label_id(mnli, x) for x in ("contradiction", "entailment", "neutral")] == [0, 1, 2]
    assert [glue.label_name(mnli, i) for i in range(3)] == list(mnli.labels)
    assert glue.label_name(mnli, np.int64(2)) == "neutral"
    with pytest.raises(ValueError, match="unknown label 'maybe'; allowed: contradiction"):
        glue.label_id(mnli, "maybe")
    with pytest.raises(ValueError, match=r"label id 3 is outside \[0, 2\]"):
        glue.label_name(mnli, 3)
    with pytest.raises(ValueError, match="stsb is a regression task"):
        glue.label_id(glue.get_spec("stsb"), "1")


def test_compute_metrics_uses_each_tasks_official_metrics():
    labels = [1, 0, 1, 1, 0, 0, 1]
    predictions = [1, 0, 0, 1, 1, 0, 1]
    mrpc = glue.compute_metrics(glue.get_spec("mrpc"), labels, predictions)
    assert mrpc == pytest.approx({"accuracy": 5 / 7, "f1": f1_score(labels, predictions)})
    cola = glue.compute_metrics(glue.get_spec("cola"), labels, predictions)
    assert cola == pytest.approx({"matthews_corr": matthews_corrcoef(labels, predictions)})
    scores, guesses = [0.0, 2.5, 5.0, 4.0], [0.5, 2.0, 4.9, 4.6]  # same order, not linear
    stsb = glue.compute_metrics(glue.get_spec("stsb"), scores, guesses)
    assert stsb == pytest.approx({"pearson": pearsonr(scores, guesses)[0], "spearman": 1.0})
    with pytest.raises(ValueError, match=r"label id 3 is outside \[0, 2\]"):
        glue.compute_metrics(glue.get_spec("mnli"), [0, 1, 2], [0, 3, 2])
    with pytest.raises(ValueError, match="'entailment' is not an integer"):
        glue.compute_metrics(glue.get_spec("rte"), ["entailment"], [0])


def read_submission(path):
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[0] == "index\tprediction" and lines[-1] == ""
    return [tuple(line.split("\t")) for line in lines[1:-1]]


def test_submission_round_trip(tmp_path):
    for name, split, predictions, expected in [
            ("rte", "test", [1, 0], ["not_entailment", "entailment"]),
            ("mrpc", "test", np.array([0, 1]), ["0", "1"]),
            ("stsb", "test", [-0.2, 5.3], ["0.000", "5.000"]),
            ("mnli", "test_mismatched", [2], ["neutral"])]:
        spec = glue.get_spec(name)
        examples = glue.read_examples(spec, fixture_dir(spec), split)
        path = tmp_path / glue.submission_name(spec, split)
        glue.write_submission(spec, split, examples, predictions, str(path))
        assert read_submission(path) == [(e.guid, p) for e, p in zip(examples, expected)]
    assert sorted(os.listdir(tmp_path)) == ["MNLI-mm.tsv", "MRPC.tsv", "RTE.tsv", "STS-B.tsv"]


def test_failed_submission_leaves_no_file(tmp_path):
    spec = glue.get_spec("rte")
    examples = glue.read_examples(spec, fixture_dir(spec), "test")
    path = tmp_path / "RTE.tsv"
    with pytest.raises(ValueError, match=r"prediction 1: rte: label id 2 is outside \[0, 1\]"):
        glue.write_submission(spec, "test", examples, [0, 2], str(path))
    with pytest.raises(ValueError, match="2 examples but 1 predictions"):
        glue.write_submission(spec, "test", examples, [0], str(path))
    with pytest.raises(ValueError, match="'dev' is not a test split; test splits: test"):
        glue.write_submission(spec, "dev", examples, [0, 1], str(path))
    assert os.listdir(tmp_path) == []


def test_every_task_has_a_recipe_from_the_paper_table():
    for name in [*glue.SPECS, "squad", "squad_v2"]:
        recipe = tasks.declared(name).recipe
        assert "Lan et al. 2020" in recipe.source and recipe.warmup_steps < recipe.train_steps
    mnli, squad = tasks.declared("mnli").recipe, tasks.declared("squad").recipe
    assert (mnli.learning_rate, mnli.batch_size, mnli.train_steps, mnli.warmup_steps) == (
        3e-5, 128, 10000, 1000)
    assert (squad.max_seq_length, squad.learning_rate, squad.train_steps) == (384, 5e-5, 3649)
    assert tasks.declared("qqp").recipe.dropout == 0.1
    assert tasks.declared("cola").recipe.dropout == 0.0


@pytest.mark.shared
def test_reads_the_real_mrpc_and_rte():
    for name, counts, labels in [("mrpc", {"train": 3668, "dev": 408}, {"0", "1"}),
                                 ("rte", {"train": 2490, "dev": 277},
                                  {"entailment", "not_entailment"})]:
        spec = glue.get_spec(name)
        folder = os.path.join(SHARED, "data", "glue", spec.folder)
        for split, count in counts.items():
            examples = glue.read_examples(spec, folder, split)
            assert len(examples) == count
            assert {e.label for e in examples} == labels
            assert all(e.text_a and e.text_b for e in examples)
    # Quotes stay literal (a quote-aware reader would merge rows and miss the
    # counts above); the byte-order mark is not part of the header's column.
    mrpc = glue.read_examples(glue.get_spec("mrpc"),
                              os.path.join(SHARED, "data", "glue", "MRPC"), "train")
    assert mrpc[0].guid == "train-2" and sum('"' in e.text_a for e in mrpc) > 100
