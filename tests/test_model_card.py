"""The model card: `README.md` in every model folder, with the metadata Hugging Face's
`ModelCard.load` reads; a set's mean +- sd and an export's variants added to it."""

import hashlib
import json
import os

import pytest
from huggingface_hub import ModelCard

import cli_helpers as cli
from albert_tf import model_card, tasks
from albert_tf.training import finetuning, seeds_folds
from albert_tf.training.settings import FinetuneSettings


def _rte_settings(tmp_path, **changes):
    return FinetuneSettings(
        task="rte", data_dir=cli.RTE, vocab_file=cli.SPM, model=cli.tiny_model(str(tmp_path)),
        output_dir=str(tmp_path / "run"), strategy="one_device", precision="fp32",
        batch_size=2, train_steps=4, warmup_steps=1, max_seq_length=32, eval_every=2,
        keep_best=True, checkpoint_every=100, log_every=100, **changes)


def test_every_model_folder_has_a_card_that_hugging_face_reads_and_export_adds_to(tmp_path):
    settings = _rte_settings(tmp_path, task_options={"label_smoothing": 0.1})
    results = finetuning.run(tasks.get("rte"), settings, verbose=False)
    folder = os.path.join(settings.output_dir, "model")
    card = ModelCard.load(os.path.join(folder, "README.md"))
    data = card.data
    assert (data.language, data.pipeline_tag, data.library_name) == \
        ("en", "text-classification", "albert_tf")
    assert {"albert", "albert_tf", "rte"} <= set(data.tags)
    [result] = [r for r in data.eval_results if r.metric_type == "accuracy"]
    assert (result.task_type, result.dataset_name, result.dataset_split) == \
        ("text-classification", "rte", "dev")
    assert result.metric_value == pytest.approx(results["dev"]["accuracy"])
    text = card.text
    # The data files with their hashes, the settings, results beside their baselines.
    train = os.path.join(cli.RTE, "train.tsv")
    digest = hashlib.sha256(open(train, "rb").read()).hexdigest()
    assert f"| `{train}` | {os.path.getsize(train):,} | `{digest}` |" in text
    assert "| learning_rate | 2e-05 |" in text  # the from-scratch recipe's, given none
    assert '| task_options | {"label_smoothing": 0.1} |' in text
    assert f"| dev | accuracy | {results['dev']['accuracy']:.4f} | " \
           f"{results['dev']['baseline_accuracy']:.4f} |" in text
    assert "from random weights (`--model=" in text and "## Intended use" in text
    assert "Trained from random weights" in text  # a limit it states
    # The best step's folder has its own card, naming its step.
    best = ModelCard.load(os.path.join(settings.output_dir, "best", "README.md"))
    assert "These are the weights of update" in best.text

    from albert_tf.tasks.finetuned import export_model

    target = export_model(folder, str(tmp_path / "export"))
    exported = ModelCard.load(os.path.join(folder, "README.md")).text
    saved = model_card.tree_bytes(target)
    assert f"| `{target}` | saved_model | {saved:,} bytes |" in exported


def test_a_sets_cards_give_its_mean_and_sd(tmp_path):
    def run(seed, path):
        model = os.path.join(path, "model")
        os.makedirs(model)
        model_card.write(model, {"name": f"seed-{seed}", "task": "rte",
                                 "pipeline_tag": "text-classification", "language": "en",
                                 "base": "the checkpoint `x`", "data": [], "settings": {},
                                 "results": {"dev": {"accuracy": 0.5 + seed / 10}}})
        return {"dev": {"accuracy": 0.5 + seed / 10}}

    seeds_folds.run_seeds(str(tmp_path), (1, 2, 3), run, ("dev",), log=lambda line: None)
    card = ModelCard.load(str(tmp_path / "seed-2" / "model" / "README.md"))
    assert "## Over 3 seeds" in card.text
    assert "| accuracy | 0.7000 ± 0.1000 | 0.6000 | 0.8000 |" in card.text
    assert "This folder is seed 2's model." in card.text
    assert json.load(open(tmp_path / "seed-2" / "model" / "model_card.json"))["repeats"][
        "count"] == 3
