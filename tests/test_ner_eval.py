"""`token_classification.ner_eval`: scores equal to seqeval's (default and strict) and to conlleval's counts."""

import json
import os
import random
import subprocess
import sys
import warnings

import pytest
from seqeval.metrics import classification_report, f1_score, precision_score, recall_score
from seqeval.scheme import IOB1, IOB2, IOBES

from conftest import FIXTURES
from albert_tf.tasks.token_classification import ner_eval

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NER = os.path.join(FIXTURES, "ner")
SEQEVAL_SCHEMES = {"iob1": IOB1, "iob2": IOB2, "bioes": IOBES}
PREFIXES = {"iob1": "IB", "iob2": "IB", "bioes": "BIES"}


def _case(rng, scheme):
    tags = ["O"] + [f"{p}-{t}" for p in PREFIXES[scheme] for t in ("PER", "LOC", "ORG")]
    gold = [[rng.choice(tags) for _ in range(rng.randint(0, 8))] for _ in range(rng.randint(1, 4))]
    predicted = [[rng.choice(tags) if rng.random() < 0.4 else t for t in s] for s in gold]
    return gold, predicted


def _seqeval(gold, predicted, mode, scheme):
    kwargs = {"mode": "strict", "scheme": SEQEVAL_SCHEMES[scheme]} if mode == "strict" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = classification_report(gold, predicted, output_dict=True, zero_division=0,
                                       **kwargs)
        micro = (precision_score(gold, predicted, **kwargs),
                 recall_score(gold, predicted, **kwargs), f1_score(gold, predicted, **kwargs))
    per_type = {k: v for k, v in report.items() if not k.endswith(" avg")}
    return micro, per_type


@pytest.mark.parametrize("mode", ["default", "strict"])
@pytest.mark.parametrize("scheme", ["iob1", "iob2", "bioes"])
def test_scores_equal_seqeval_on_generated_cases(mode, scheme):
    rng = random.Random(f"{mode}{scheme}")
    for _ in range(120):
        gold, predicted = _case(rng, scheme)
        (p, r, f), per_type = _seqeval(gold, predicted, mode, scheme)
        mine = ner_eval.score(gold, predicted, mode, scheme)
        assert (mine["precision"], mine["recall"], mine["f1"]) == pytest.approx((p, r, f))
        # seqeval lists the types of gold entities (and of predicted ones with support 0).
        for kind, values in per_type.items():
            got = mine["per_type"][kind]
            assert got["support"] == values["support"]
            assert (got["precision"], got["recall"], got["f1"]) == pytest.approx(
                (values["precision"], values["recall"], values["f1-score"])), (gold, predicted)


# conlleval's counting, written from its documentation (the CoNLL-2000
# chunking output page and the script's header): a chunk is right when its
# first and last word and its type are right; tokens, phrases in the corpus,
# phrases found, correct ones; accuracy is the share of tokens whose tag is
# right; the number after each type's FB1 is the phrases found of the type.
def _conlleval_chunks(tags):
    chunks, start, prev = [], None, ("O", "")
    for i, tag in enumerate(tags + ["O"]):
        prefix, kind = ("O", "") if tag == "O" else (tag[0], tag[2:])
        ends = prev[0] != "O" and (prev[0] in "ES" or prefix in "BSO" or prev[1] != kind)
        starts = prefix != "O" and (prefix in "BS" or prev[0] in "OES" or prev[1] != kind)
        if ends and start is not None:
            chunks.append((start, i, prev[1]))
            start = None
        if starts:
            start = i
        prev = (prefix, kind)
    return chunks


def _conlleval_counts(gold, predicted):
    counts = {"tokens": 0, "gold": 0, "found": 0, "correct": 0, "right_tags": 0}
    for g, p in zip(gold, predicted):
        g_chunks, p_chunks = set(_conlleval_chunks(g)), set(_conlleval_chunks(p))
        counts["tokens"] += len(g)
        counts["gold"] += len(g_chunks)
        counts["found"] += len(p_chunks)
        counts["correct"] += len(g_chunks & p_chunks)
        counts["right_tags"] += sum(a == b for a, b in zip(g, p))
    return counts


def test_counts_equal_conlleval_on_a_real_file():
    """Real CLUENER2020 sentences (character per line) and a model's real predictions."""
    gold, _ = ner_eval.read_conll_tags(os.path.join(NER, "cluener_gold.conll"))
    predicted, _ = ner_eval.read_conll_tags(os.path.join(NER, "cluener_predicted.conll"))
    expected = _conlleval_counts(gold, predicted)
    mine = ner_eval.score(gold, predicted)
    assert expected["correct"] > 0 and expected["found"] != expected["correct"]
    for key in ("tokens", "gold", "found", "correct"):
        assert mine[key] == expected[key]
    assert mine["accuracy"] == pytest.approx(expected["right_tags"] / expected["tokens"])
    assert mine["precision"] == pytest.approx(expected["correct"] / expected["found"])
    assert mine["recall"] == pytest.approx(expected["correct"] / expected["gold"])
    (p, r, f), _ = _seqeval(gold, predicted, "default", "iob2")
    assert (mine["precision"], mine["recall"], mine["f1"]) == pytest.approx((p, r, f))


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "albert_tf.tasks.token_classification.ner_eval", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)


def test_command_prints_conlleval_report_and_json(tmp_path):
    gold, predicted = tmp_path / "gold.conll", tmp_path / "pred.conll"
    gold.write_text("-DOCSTART- O\n\nJohn B-PER\nlives O\nin O\nNew B-LOC\nYork I-LOC\n\n"
                    "Ann B-PER\n", encoding="utf-8")
    predicted.write_text("-DOCSTART- O\n\nJohn B-PER\nlives O\nin O\nNew B-LOC\nYork O\n\n"
                         "Ann B-ORG\n", encoding="utf-8")
    text = _cli(str(gold), str(predicted))
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == "processed 6 tokens with 3 phrases; found: 3 phrases; correct: 1."
    assert lines[1] == "accuracy:  66.67%; precision:  33.33%; recall:  33.33%; FB1:  33.33"
    assert lines[2] == "              LOC: precision:   0.00%; recall:   0.00%; FB1:   0.00  1"
    as_json = _cli(str(gold), str(predicted), "--json", "--mode=strict")
    values = json.loads(as_json.stdout)
    assert values["f1"] == pytest.approx(1 / 3)
    assert values["per_type"]["PER"] == {"precision": 1.0, "recall": 0.5,
                                         "f1": pytest.approx(2 / 3), "support": 2}
    assert values["per_type"]["ORG"]["support"] == 0


def test_command_names_the_line_where_tokens_differ(tmp_path):
    gold, predicted = tmp_path / "gold.conll", tmp_path / "pred.conll"
    gold.write_text("John B-PER\nlives O\n", encoding="utf-8")
    predicted.write_text("John B-PER\nloves O\n", encoding="utf-8")
    result = _cli(str(gold), str(predicted))
    assert result.returncode == 1
    assert result.stderr.strip() == (f"error: {predicted}:2: token 'loves' where {gold}:2 has "
                                     "'lives'")
    predicted.write_text("John B-PER\nlives Q-X\n", encoding="utf-8")
    assert f"{predicted}:2: tag 'Q-X'" in _cli(str(gold), str(predicted)).stderr


def test_report_equals_conlleval_itself_on_a_real_file():
    """The report, character for character, as conlleval.pl (version 2004-01-26, run on
    the two files pasted into its `token gold predicted` input) printed it; its output
    is stored in fixtures/ner/cluener_conlleval.txt."""
    gold, predicted = (os.path.join(NER, f"cluener_{n}.conll") for n in ("gold", "predicted"))
    result = _cli(gold, predicted)
    assert result.returncode == 0, result.stderr
    with open(os.path.join(NER, "cluener_conlleval.txt"), encoding="utf-8") as f:
        assert result.stdout == f.read()


def test_a_runs_printed_results_say_which_f1_is_which(capsys):
    from albert_tf.tasks.token_classification.task import METRIC_NOTES
    from albert_tf.training.results import print_results

    print_results({"dev": {"f1": 0.1871, "strict_f1": 0.2576, "metric_notes": METRIC_NOTES}})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "dev: f1=0.1871, strict_f1=0.2576"
    assert lines[1].startswith("  f1: entity F1 as CoNLL's conlleval counts")
    assert lines[2].startswith("  strict_f1: entity F1 of spans well-formed in the tagging")
