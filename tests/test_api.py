"""`albert_tf.api`: the commands as Python functions, equal to the commands."""

import json
import os

import numpy as np
import pytest

import cli_helpers as cli

ROWS = [{"review": t, "stars": s} for t, s in [
    ("a fine film", "good"), ("dull and long", "bad"), ("I loved it", "good"),
    ("a waste of time", "bad"), ("great acting", "good"), ("boring plot", "bad")]]
DEV = [{"review": "fine acting", "stars": "good"}, {"review": "so dull", "stars": "bad"},
       {"review": "loved the plot", "stars": "good"}]


def _flags(tmp_path, output_dir):
    return {"task": "text_classification", "vocab_file": cli.SPM,
            "model": cli.tiny_model(str(tmp_path)), "output_dir": str(output_dir),
            "text_column": "review", "label_column": "stars", "batch_size": 2,
            "max_seq_length": 16, "train_steps": 3, "warmup_steps": 1, "learning_rate": 1e-3,
            "checkpoint_every": 3, "log_every": 3, "precision": "fp32", "eval_batch_size": 4}


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _command(module, args, capsys):
    """`main` of a program as the shell runs it (its flags parsed from `args`), in
    this process; its stdout."""
    capsys.readouterr()
    cli.run_here(module, *args)
    return capsys.readouterr().out


def _without_timing(results, run_dir):
    """The results without the throughput, the run's folder named RUN in paths."""
    results = {**results, "train": {k: v for k, v in results["train"].items()
                                    if k != "train_examples_per_second"}}
    return json.loads(json.dumps(results).replace(str(run_dir), "RUN"))


# Fine-tunes, exports and predicts twice, by command and by function (~25 s of CPU);
# the default tier checks the functions against the commands' settings (test_program.py).
@pytest.mark.slow
def test_each_function_equals_its_command_and_a_dataframe_trains_as_its_file(tmp_path, capsys):
    pandas = pytest.importorskip("pandas")
    from albert_tf.commands import api
    from albert_tf.commands import finetune as finetune_program
    from albert_tf.commands import predict as predict_program

    # The command, on files.
    command_dir, api_dir = tmp_path / "command", tmp_path / "api"
    values = _flags(tmp_path, command_dir)
    values.update(train_file=_jsonl(tmp_path / "train.jsonl", ROWS),
                  eval_file=_jsonl(tmp_path / "dev.jsonl", DEV))
    printed = _command(finetune_program, [f"--{k}={v}" for k, v in values.items()], capsys)
    assert "dev: accuracy=" in printed
    # The function, on DataFrames of the same rows: the same results.
    results = api.finetune(**dict(_flags(tmp_path, api_dir), train_file=pandas.DataFrame(ROWS),
                                  eval_file=pandas.DataFrame(DEV)))
    assert _without_timing(results, api_dir) == \
        _without_timing(cli.results(command_dir), command_dir)
    assert cli.results(api_dir) == json.loads(json.dumps(results))
    written = sorted(os.listdir(api_dir / "dataframes"))
    assert [n.split("-")[0] for n in written] == ["eval_file", "train_file"]
    with open(api_dir / "dataframes" / written[1], encoding="utf-8") as f:
        assert [json.loads(line) for line in f] == ROWS
    # evaluate: the run's checkpoint scored again, without training.
    again = api.evaluate(output_dir=str(api_dir))
    assert again["dev"] == results["dev"] and "train" not in again
    # predict: the command's JSON line, the function's answer, the loaded model's.
    printed = _command(predict_program, [f"--model={command_dir}",
                                         '--row={"review": "a fine plot", "id": 3}'], capsys)
    line = json.loads(printed)
    assert line["id"] == 3 and line["label"] in ("good", "bad")
    answers = api.predict(str(api_dir), [{"review": "a fine plot", "id": 3}, "dull"])
    model = api.load(api_dir)
    frame = pandas.DataFrame([{"review": "a fine plot", "id": 3}, {"review": "dull"}])
    assert model.predict(frame) == [dict(answers[0], id=3.0), answers[1]]  # (NaN: no id)
    assert answers[0]["id"] == 3 and answers[0]["label"] == line["label"]
    np.testing.assert_allclose(answers[0]["probabilities"], line["probabilities"], atol=1e-6)
    # export: the version folder; the predict command on it answers as the function.
    exported = api.export(model_dir=str(api_dir), export_dir=str(tmp_path / "export"),
                          precision="fp32")
    assert exported == {"export_dir": str(tmp_path / "export" / "1"), "evaluation": None}
    printed = _command(predict_program, [f"--model={tmp_path / 'export'}",
                                         '--row={"review": "a fine plot", "id": 3}'], capsys)
    served = api.load(exported["export_dir"]).predict([{"review": "a fine plot", "id": 3}])
    assert served == [json.loads(printed)] and served[0]["label"] == answers[0]["label"]
    np.testing.assert_allclose(served[0]["probabilities"], answers[0]["probabilities"],
                               atol=1e-5)
    # The Keras model is the one served: fitted, its answers follow.
    keras_model = model.keras_model
    assert keras_model.count_params() > 0
    for variable in keras_model.trainable_variables:
        if variable.path.endswith("classifier/bias"):
            variable.assign(variable.numpy() + np.array([50.0, -50.0])[:variable.shape[0]])
    assert [a["label_id"] for a in model.predict(["dull", "fine", "a plot"])] == [0, 0, 0]


def test_a_bad_flag_raises_the_commands_line(tmp_path):
    from albert_tf.commands import api

    good = _flags(tmp_path, tmp_path / "run")
    for call, kwargs, message in (
            (api.finetune, dict(good, batch_size=0), "batch_size must be >= 1, got 0"),
            (api.finetune, dict(good, batchsize=2),
             "finetune has no flag --batchsize; did you mean --batch_size?"),
            (api.finetune, {"task": "rte"}, "missing required flag(s): --output_dir"),
            (api.finetune, dict(good, seeds="x"), "seeds must be a comma-separated list"),
            (api.evaluate, dict(good, do_train=True), "evaluate does not train"),
            (api.pretrain, {"input_files": "x", "output_dir": str(tmp_path), "train_steps": 0},
             "train_steps must be >= 1, got 0"),
            (api.distill, {"output_dir": str(tmp_path / "d")},
             "missing required flag(s): --teacher, --student"),
            (api.export, {"model_dir": str(tmp_path)}, "missing required flag(s): --export_dir"),
            (api.export, {"model_dir": str(tmp_path), "export_dir": str(tmp_path / "e"),
                          "version": 0}, "version must be >= 1, got 0"),
            (api.export, {"model_dir": str(tmp_path), "export_dir": str(tmp_path / "e"),
                          "tflite_variants": ["int8"]}, "formats: tflite:int8 is calibrated"),
            (api.predict, {"model": str(tmp_path / "none"), "inputs": ["x"]},
             "--model: no such file or folder"),
            (api.predict, {"model": str(tmp_path), "inputs": ["x"], "batch_size": 0},
             "batch_size must be >= 1, got 0")):
        with pytest.raises((ValueError, OSError)) as caught:
            call(**kwargs)
        assert str(caught.value).startswith(message), (kwargs, str(caught.value))
        assert "\n" not in str(caught.value)


def _kwargs(args):
    """`--name=value` arguments as keyword arguments, valued as the flags parse them."""
    from albert_tf.training.settings import FinetuneSettings
    from albert_tf.settings import value_type

    kinds = {f.name: value_type(f)[0] for f in FinetuneSettings.__dataclass_fields__.values()}
    values = {}
    for arg in args:
        name, _, value = arg[2:].partition("=")
        name = {"spm_model": "vocab_file"}.get(name, name)
        kind = kinds.get(name, str)
        values[name] = kind(value) if kind in (int, float) else value
    return values


@pytest.mark.slow
def test_finetune_export_and_predict_from_the_shell_equal_the_functions(tmp_path):
    from albert_tf.commands import api

    model = cli.tiny_model(str(tmp_path))
    shell, python = tmp_path / "shell", tmp_path / "python"
    result = cli.run("albert_tf.finetune", *cli.rte_args(shell, model))
    assert result.returncode == 0, result.stderr[-3000:]
    results = api.finetune(**_kwargs(cli.rte_args(python, model)))
    assert _without_timing(results, python) == _without_timing(cli.results(shell), shell)

    result = cli.run("albert_tf.export", f"--model_dir={shell}", f"--export_dir={shell}/export",
                     "--precision=fp32", "--tflite")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == f"{shell}/export/1"
    exported = api.export(model_dir=str(python), export_dir=f"{python}/export", precision="fp32",
                          tflite=True)
    assert exported == {"export_dir": f"{python}/export/1", "evaluation": None}
    infos = []
    for root in (shell, python):
        with open(os.path.join(root, "export", "1", "assets.extra", "albert_tf_export.json"),
                  encoding="utf-8") as f:
            info = json.loads(f.read().replace(str(root), "RUN"))
        # (the converter's flatbuffer differs by a few bytes between any two conversions)
        assert info["formats"]["tflite"].pop("bytes") > 0
        infos.append(info)
    assert infos[0] == infos[1]

    rows = tmp_path / "rows.jsonl"
    _jsonl(rows, [{"id": i, "text_a": a, "text_b": b} for i, (a, b) in enumerate(
        [("A man sleeps.", "He rests."), ("It rains.", "The sun shines."), ("", "x")])])
    result = cli.run("albert_tf.predict", f"--model={shell}/export", f"--input={rows}",
                     "--batch_size=2")
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert api.predict(f"{python}/export", input=str(rows), batch_size=2) == lines
    assert api.load(f"{python}/export").predict(
        [(r["text_a"], r["text_b"]) for r in map(json.loads, rows.read_text().splitlines())]) \
        == [{k: v for k, v in line.items() if k != "id"} for line in lines]


@pytest.mark.slow
def test_pretrain_from_the_shell_equals_the_function(tmp_path):
    from albert_tf.commands import api
    from conftest import FIXTURES

    data = tmp_path / "data" / "train"
    made = cli.run("albert_tf.create_pretraining_data",
                   f"--input={os.path.join(FIXTURES, 'pretraining', 'ledger_gutenberg.txt')}",
                   "--input_format=prose", f"--spm_model={cli.SPM}", f"--output={data}",
                   "--max_seq_length=64", "--max_predictions_per_seq=10")
    assert made.returncode == 0, made.stderr[-2000:]
    values = {"input_files": f"{data}-*", "eval_files": f"{data}-*",
              "model": cli.tiny_model(str(tmp_path)), "vocab_file": cli.SPM,
              "max_seq_length": 64, "max_predictions_per_seq": 10, "batch_size": 8,
              "train_steps": 4, "warmup_steps": 1, "checkpoint_every": 4, "precision": "fp32",
              "eval_batches": 2}
    result = cli.run("albert_tf.pretrain", f"--output_dir={tmp_path / 'shell'}",
                     *[f"--{k}={v}" for k, v in values.items()])
    assert result.returncode == 0, result.stderr[-3000:]
    results = api.pretrain(output_dir=str(tmp_path / "python"), **values)
    with open(tmp_path / "shell" / "pretrain_results.json") as f:
        shell = json.load(f)
    assert results["eval"] == shell["eval"] and results["train"]["step"] == 4


# A search with its trial processes run twice (~9 s); search itself: test_search.py.
@pytest.mark.slow
def test_search_equals_its_command(tmp_path, monkeypatch, capsys):
    pytest.importorskip("optuna")
    from albert_tf.commands import api
    from albert_tf.commands import search as search_program
    from albert_tf.tuning import watch

    from conftest import FIXTURES

    monkeypatch.setattr(watch, "start_finetune", cli.start_fake_finetune)
    # (what the trials read is checked before the study starts: real inputs, tiny)
    values = {"task": "mrpc", "data_dir": os.path.join(FIXTURES, "glue", "MRPC"),
              "vocab_file": cli.SPM, "model": cli.tiny_model(str(tmp_path)), "max_seq_length": 32,
              "space": "learning_rate=1e-3,2e-3", "sampler": "grid", "trials": 2,
              "seeds_per_trial": 1}
    command_dir, api_dir = tmp_path / "command", tmp_path / "api"
    printed = _command(search_program, [f"--{k}={v}" for k, v in values.items()]
                       + [f"--output_dir={command_dir}"], capsys)
    found = api.search(**values, output_dir=str(api_dir))
    assert f"best: trial {found['best']['trial']}" in printed
    assert found["best"]["accuracy"] == pytest.approx(2.0 + 12345 / 100)  # 2e-3, the seed
    with open(command_dir / "trials.json", encoding="utf-8") as f:
        command = json.loads(f.read().replace(str(command_dir), "RUN"))
    assert json.loads(json.dumps(found["trials"]).replace(str(api_dir), "RUN")) == \
        command["rows"]
