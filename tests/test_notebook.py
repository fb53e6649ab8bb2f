"""notebooks/colab_finetune.ipynb: its shape (fast) and a full run in tiny mode (slow)."""

import json
import os

import pytest

import cli_helpers as cli

NOTEBOOKS = os.path.join(cli.ROOT, "notebooks")
NOTEBOOK = os.path.join(NOTEBOOKS, "colab_finetune.ipynb")


def _cells():
    with open(NOTEBOOK, encoding="utf-8") as f:
        notebook = json.load(f)
    assert notebook["nbformat"] == 4
    return notebook["cells"]


def test_notebook_has_a_settings_cell_and_the_steps():
    cells = _cells()
    settings = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(settings) == 1
    source = "".join(settings[0]["source"])
    assert 'os.environ.get("ALBERT_TF_NOTEBOOK_TINY") == "1"' in source
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    for step in ("api.finetune(**run", '"precision": "auto"', "albert_tf.tasks.squad.evaluate", "api.export(",
                 "tf.saved_model.load", "api.load(EXPORT_DIR)", ":predict", "docker run"):
        assert step in code, step
    # The commands run through albert_tf.api, not shelled out to.
    for command in ("albert_tf.finetune", "albert_tf.export", "albert_tf.predict"):
        assert command not in code, command
    assert all(not c.get("outputs") for c in cells if c["cell_type"] == "code")  # saved clean


@pytest.mark.slow
def test_notebook_runs_end_to_end_in_tiny_mode(tmp_path, monkeypatch):
    """Every cell runs (on CPU, offline): fine-tune, evaluate, export, query."""
    import nbclient
    import nbformat

    monkeypatch.setenv("ALBERT_TF_NOTEBOOK_TINY", "1")
    monkeypatch.setenv("ALBERT_TF_NOTEBOOK_OUTPUT", str(tmp_path / "run"))
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=900, kernel_name="python3",
                                     resources={"metadata": {"path": NOTEBOOKS}})
    client.execute()
    text = "\n".join(output.get("text", "") for cell in notebook.cells
                     for output in cell.get("outputs", []) if output.get("name") == "stdout")
    assert '"exact"' in text and "answer: [" in text and "null_odds: [" in text, text[-3000:]
    assert '"answer": ' in text  # api.load(...).predict's answer, as the predict command prints it
    assert "curl -s -X POST http://localhost:8501/v1/models/albert_squad_v2:predict" in text
    assert os.path.isfile(tmp_path / "run" / "export" / "1" / "saved_model.pb")
    assert os.path.isfile(tmp_path / "run" / "export" / "1" / "model.tflite")
