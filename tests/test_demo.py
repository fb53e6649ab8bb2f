"""The `--demo` runs, end to end through the CLI (slow: about a minute and a half each)."""

import pytest

import cli_helpers as cli


@pytest.mark.slow
@pytest.mark.parametrize("task,metric,floor", [("squad", "exact_match", 40.0),
                                               ("squad_v2", "f1", 50.0),
                                               ("rte", "accuracy", 0.6),
                                               ("ocnli", "accuracy", 0.5),
                                               ("cmrc2018", "em", 40.0)])
def test_demo_learns_its_generated_task(tmp_path, task, metric, floor):
    result = cli.run("albert_tf.finetune", "--demo", f"--task={task}",
                     f"--output_dir={tmp_path}", timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert cli.results(tmp_path)["dev"][metric] > floor
    # From scratch on purpose: said plainly, not as the forgotten-checkpoint warning.
    assert "demo: a small ALBERT (4 shared layers" in result.stdout
    assert "random initialisation" not in result.stderr
    if task in ("squad", "squad_v2", "cmrc2018"):
        assert "question: " in result.stdout and "answer: " in result.stdout
    else:
        assert "text_b: " in result.stdout and "label: " in result.stdout


def test_demo_rejects_tasks_it_has_no_data_for(tmp_path):
    result = cli.run("albert_tf.finetune", "--demo", "--task=cola", f"--output_dir={tmp_path}")
    assert cli.one_line_error(result) == ("error: --demo supports the tasks rte, squad, "
                                          "squad_v2, ocnli, cmrc2018, not 'cola'")
