"""Ablation grids: parsing, variant configs, settings and the held-out split (no TensorFlow)."""

import itertools

import pytest

from albert_tf.ablation import grid
from albert_tf.ablation.data import split_text
from albert_tf.ablation.settings import AblationSettings
from albert_tf.config import AlbertConfig

BASE = AlbertConfig(vocabulary_size=50, embedding_dim=6, hidden_dim=12, num_heads=2,
                    intermediate_dim=30, num_layers=3, max_sequence_length=16)


def base_variant():
    return grid.base_variant(BASE, "sop", 7)


def names(variants):
    return [(v.sharing, v.sentence_task, v.seed, v.num_layers) for v in variants]


def test_a_sub_grid_is_the_cross_product_of_its_axes():
    variants = grid.parse_grid("sharing=all,none;sentence_task=nsp,sop,none;num_layers=2,4",
                               base_variant())
    expected = list(itertools.product(["all", "none"], ["nsp", "sop", "none"], [2, 4]))
    assert sorted((v.sharing, v.sentence_task, v.num_layers) for v in variants) == \
        sorted(expected)
    assert len({v.name for v in variants}) == 12


def test_sub_grids_join_in_order_without_repeats():
    variants = grid.parse_grid("sharing=all,attention,ffn,none | sentence_task=nsp,sop | seed=2",
                               base_variant())
    assert names(variants) == [("all", "sop", 7, 3), ("attention", "sop", 7, 3),
                               ("ffn", "sop", 7, 3), ("none", "sop", 7, 3),
                               ("all", "nsp", 7, 3), ("all", "sop", 2, 3)]


def test_an_empty_grid_is_the_base_alone():
    assert grid.parse_grid("", base_variant()) == [base_variant()]
    assert base_variant().name == "all-E6-L3-H12-sop-seed7"


@pytest.mark.parametrize("spec, message", [
    ("shraing=all", "--grid: unknown key 'shraing' in 'shraing=all' (known: sharing, "
                    "embedding_dim, num_layers, hidden_dim, sentence_task, seed)"),
    ("sharing=all,most", "--grid: sharing='most' in 'sharing=all,most': expected one of all, "
                         "attention, ffn, none"),
    ("sentence_task=mlm", "--grid: sentence_task='mlm' in 'sentence_task=mlm': expected one "
                          "of none, nsp, sop"),
    ("num_layers=two", "--grid: num_layers='two' in 'num_layers=two': expected an integer >= 1"),
    ("hidden_dim=0", "--grid: hidden_dim='0' in 'hidden_dim=0': expected an integer >= 1"),
    ("seed=-1", "--grid: seed='-1' in 'seed=-1': expected an integer >= 0"),
    ("sharing", "--grid: 'sharing' is not key=value[,value...]"),
    ("sharing=all,", "--grid: an empty value in 'sharing=all,'"),
    ("seed=1;seed=2", "--grid: seed is given twice in 'seed=1;seed=2'"),
])
def test_a_bad_grid_names_the_key_or_value(spec, message):
    with pytest.raises(ValueError) as e:
        grid.parse_grid(spec, base_variant())
    assert str(e.value) == message


def test_a_variant_config_changes_only_its_axes():
    variant = grid.Variant(sharing="none", embedding_dim=4, num_layers=5, hidden_dim=8,
                           sentence_task="nsp", seed=1)
    config = variant.config(BASE.replace(num_groups=3, num_layers=3))
    assert (config.sharing, config.embedding_dim, config.num_layers, config.hidden_dim) == \
        ("none", 4, 5, 8)
    assert config.intermediate_dim == 20  # the base's 30/12 ratio
    assert config.num_groups == 1  # one group per layer is what "none" means
    assert config.num_heads == 2 and config.vocabulary_size == 50


def test_an_impossible_variant_stops_the_grid_before_work():
    variants = grid.parse_grid("hidden_dim=12,9", base_variant())
    with pytest.raises(ValueError, match="variant all-E6-L3-H9-sop-seed7: .*num_heads"):
        grid.check_variants(variants, BASE)


def _settings(**values):
    return AblationSettings(output_dir="out", corpus="c.txt", vocab_file="v.model", **values)


def test_exactly_one_budget():
    assert _settings(budget_tokens=1000).budget_tokens == 1000
    for budgets in ({}, {"budget_steps": 3, "budget_seconds": 2.0}):
        with pytest.raises(ValueError, match="exactly one of --budget_steps"):
            _settings(**budgets)
    with pytest.raises(ValueError, match="finetune_data_dir must be a folder"):
        _settings(budget_steps=3, finetune="rte")
    assert _settings(budget_steps=3, finetune=" rte, mrpc,", finetune_data_dir="glue"
                     ).finetune_tasks == ["rte", "mrpc"]


def test_held_out_text_starts_at_a_blank_line_with_text_after_it(tmp_path):
    path = tmp_path / "book.txt"
    lines = [f"line {i}" if i % 4 else "" for i in range(1, 41)]  # blank every 4th line
    path.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    train, heldout = split_text(str(path), 0.25)
    assert train + heldout == lines
    assert len(train) == 31 and heldout[0] == "" and heldout[1] == "line 33"
    # No blank line after the cut: cut at the line itself.
    path.write_text("\n".join(f"s{i}" for i in range(10)) + "\n", encoding="utf-8")
    train, heldout = split_text(str(path), 0.3)
    assert (len(train), heldout) == (7, ["s7", "s8", "s9"])


def test_a_corpus_file_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1.txt:1: not UTF-8 \(invalid continuation byte at byte 3\)"):
        split_text(str(path), 0.1)


def test_a_collapsed_variant_is_named_in_the_notes():
    """The table5 miniature's SOP variant at AdamW 1e-3: MLM accuracy 0.0628, the
    most frequent token's share, and a sentence head answering one label."""
    from albert_tf.ablation.report import notes

    details = {"mlm_baseline": 0.0628, "sop_scored_by": "sop head",
               "nsp_scored_by": "sop head"}
    stuck = {"variant": "v-sop", "mlm_accuracy": 0.0628, "sop_balanced_accuracy": 0.5,
             "nsp_balanced_accuracy": 0.5, "details": details}
    learning = {"variant": "v-nsp", "mlm_accuracy": 0.1304, "sop_balanced_accuracy": 0.5083,
                "nsp_balanced_accuracy": 0.5249, "details": details}
    probed = {"variant": "v-none", "mlm_accuracy": 0.1303, "sop_balanced_accuracy": 0.5,
              "details": dict(details, sop_scored_by="linear probe")}
    warned = [n for n in notes([stuck, learning, probed]) if n.startswith("warning: ")]
    assert warned == [
        "warning: v-sop's MLM accuracy 0.0628 is the most frequent token's share (0.0628): it "
        "predicts one token, a collapsed run (another seed or a lower --learning_rate).",
        "warning: v-sop's sentence head answers one label whatever the nsp pair (balanced "
        "accuracy 0.5).",
        "warning: v-sop's sentence head answers one label whatever the sop pair (balanced "
        "accuracy 0.5)."]


def test_a_head_not_above_its_own_baseline_is_named_with_its_updates():
    """The miniature with --seed=2: the NSP head clears its baseline, the SOP head's
    interval holds its baseline (balanced 0.502, so not one label): the notes say
    which half of the pattern is missing and after how many updates."""
    from albert_tf.ablation.report import notes

    def variant(task, accuracy, interval, baseline, balanced):
        return {"variant": f"v-{task}", "sentence_task": task, "steps": 1759,
                "mlm_accuracy": 0.15, f"{task}_accuracy": accuracy,
                f"{task}_baseline": baseline, f"{task}_balanced_accuracy": balanced,
                "details": {"mlm_baseline": 0.0628, f"{task}_ci95": interval,
                            f"{task}_scored_by": f"{task} head"}}

    rows = [variant("nsp", 0.695, [0.670, 0.720], 0.510, 0.693),
            variant("sop", 0.484, [0.457, 0.512], 0.519, 0.502),
            {"variant": "v-none", "sentence_task": "none", "steps": 1759,
             "mlm_accuracy": 0.15, "details": {"mlm_baseline": 0.0628}}]
    warned = [n for n in notes(rows) if n.startswith("warning: ")]
    assert warned == [
        "warning: v-sop's sop head is not above its sop baseline after 1,759 updates "
        "(0.4840 [0.457-0.512] against 0.5190): it has not learnt its task at this budget; "
        "more updates (--budget_seconds, --budget_steps) or more distinct text may start it "
        "(--eval_every's eval_history.jsonl shows whether it was rising)."]
    # Its interval's low end just over the baseline: above it, no warning.
    rows[1] = variant("sop", 0.551, [0.523, 0.578], 0.519, 0.553)
    assert not [n for n in notes(rows) if n.startswith("warning: ")]


def test_training_pairs_can_be_cut_as_the_held_out_ones_are():
    from albert_tf.ablation.data import data_folder, data_options

    class Vocabulary:
        def fingerprint(self):
            return "v"

    reference = AblationSettings(output_dir="g", corpus="c.txt", vocab_file="s.model",
                                 budget_steps=1)
    cut = reference.replace(single_sentence="split")
    assert data_options(reference, "sop", "train").single_sentence == "random_b"
    assert data_options(cut, "sop", "train").single_sentence == "split"
    assert {data_options(s, t, "heldout").single_sentence
            for s in (reference, cut) for t in ("sop", "nsp")} == {"split"}
    # Other training pairs, another data folder.
    assert data_folder(cut, Vocabulary()) != data_folder(reference, Vocabulary())


def test_the_table5_miniature_config_is_a_valid_grid():
    """configs/table5_mini.json (README's Table 5 in miniature) names only ablate's
    settings, with values they take, and one budget."""
    import json
    import os

    from conftest import FIXTURES

    path = os.path.join(FIXTURES, "..", "..", "configs", "table5_mini.json")
    with open(path) as f:
        values = json.load(f)
    settings = AblationSettings(output_dir="g", corpus="books/*.txt",  # checked as made
                                vocab_file="30k-clean.model", **values)
    base = grid.base_variant(AlbertConfig.preset(settings.model), settings.sentence_task,
                             settings.seed)
    assert [v.sentence_task for v in grid.parse_grid(settings.grid, base)] == [
        "none", "nsp", "sop"]
    assert settings.single_sentence == "split" and settings.budget_seconds * 3 <= 25 * 60
