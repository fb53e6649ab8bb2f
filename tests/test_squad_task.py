import json
import os
import shutil

import pytest

import cli_helpers as cli
from albert_tf import tasks
from albert_tf.training.settings import FinetuneSettings
from conftest import FIXTURES
from albert_tf.tasks.squad import evaluate as squad_eval
from albert_tf.tasks.squad.data import read_squad
from albert_tf.tasks.squad.task import to_dataset

SQUAD = os.path.join(FIXTURES, "squad_data")


def _data_dir(tmp_path, version):
    source = os.path.join(SQUAD, "v2.json" if version == "2.0" else "v1.json")
    for split in ("train", "dev"):
        shutil.copy(source, tmp_path / f"{split}-v{version}.json")
    return str(tmp_path)


def test_heldout_split_is_a_stable_part_of_train(tmp_path, monkeypatch):
    task = tasks.get("squad_v2")
    data_dir = _data_dir(tmp_path, "2.0")
    monkeypatch.setattr("albert_tf.tasks.squad.task.HELDOUT_FRACTION", 0.5)
    train = {e.qid for e in task.read_examples(data_dir, "train")}
    heldout = {e.qid for e in task.read_examples(data_dir, "heldout")}
    everything = {e.qid for e in task.read_examples(data_dir, "dev")}
    assert train | heldout == everything and not train & heldout
    assert heldout == {e.qid for e in task.read_examples(data_dir, "heldout")}
    with pytest.raises(ValueError, match="task 'squad' has no split 'heldout'"):
        tasks.get("squad").read_examples(data_dir, "heldout")


def test_missing_file_names_both_candidates(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no dev-v1.1.json or dev.json"):
        tasks.get("squad").read_examples(str(tmp_path), "dev")


def test_rebuilt_dataset_scores_like_the_original_file():
    with open(os.path.join(SQUAD, "v2.json")) as f:
        original = json.load(f)["data"]
    examples = read_squad(os.path.join(SQUAD, "v2.json"))
    predictions = {e.qid: (e.answers[0][0][:-1] if e.answers else "x") for e in examples}
    odds = {e.qid: 0.1 * i for i, e in enumerate(examples)}
    assert squad_eval.evaluate_v2(to_dataset(examples), predictions, odds) == \
        squad_eval.evaluate_v2(original, predictions, odds)


def test_options_are_validated():
    task = tasks.get("squad_v2")
    settings = FinetuneSettings(task="squad_v2", output_dir="x",
                                task_options={"doc_strid": 3})
    with pytest.raises(ValueError, match="unknown option for task 'squad_v2'"):
        task.options(settings)
    with pytest.raises(ValueError, match="qa_head must be one of beam, span, got 'xlnet'"):
        task.options(settings.replace(task_options={"qa_head": "xlnet"}))


# v1.1's run is in the slow tier: the command's path is v2.0's, and v1.1's scores
# are checked against the official script in test_squad_eval.py.
@pytest.mark.parametrize("name,version", [pytest.param("squad", "1.1", marks=pytest.mark.slow),
                                          ("squad_v2", "2.0")])
def test_cli_run_matches_the_official_evaluation_of_its_files(tmp_path, name, version):
    # The command's program in this process (test_finetune_cli.py runs it as a
    # process); the official script as one.
    from albert_tf.commands import finetune

    out = tmp_path / "run"
    cli.run_here(finetune, f"--task={name}",
                 f"--data_dir={_data_dir(tmp_path, version)}", f"--spm_model={cli.SPM}",
                 f"--model={cli.tiny_model(tmp_path)}", f"--output_dir={out}",
                 "--train_steps=6", "--warmup_steps=1", "--batch_size=4",
                 "--max_seq_length=64", "--doc_stride=24", "--max_query_length=16",
                 "--precision=fp32")
    dev = cli.results(out)["dev"]
    data = str(tmp_path / f"dev-v{version}.json")
    args = [data, str(out / "predictions.json")]
    if version == "2.0":
        # predictions.json has the held-out threshold applied already.
        args += [f"--na_prob_file={out / 'null_odds.json'}", "--na_prob_thresh=1e9"]
    official = json.loads(cli.run("albert_tf.tasks.squad.evaluate", *args).stdout)
    if version == "1.1":
        assert official == {"exact_match": dev["exact_match"], "f1": dev["f1"]}
    else:
        assert official["exact"] == dev["exact"] and official["f1"] == dev["f1"]
        assert dev["threshold_source"] in ("held-out training questions", "default 0")
        assert "dev_tuned_best_f1" in dev
    assert os.path.isfile(out / "nbest_predictions.json")
