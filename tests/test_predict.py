"""`python -m albert_tf.predict`, run as a user runs it."""

import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import cli_helpers as cli
import export_helpers as helpers

ROWS = [{"id": "a", "question": "Who wrote the book?",
         "context": "Anna wrote the book in 1990, in Paris, then left for Rome."},
        {"id": 7, "question": "", "context": ""},
        {"question": "what is ½?", "context": "ﬁve ½ quarters of 12,345 pounds " * 5},
        {"id": "d", "question": "Où?", "context": "東京 🙂 Genève"},
        {"id": "e", "question": "x", "context": "y"}]


def _predict(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "albert_tf.predict", *args], input=stdin,
                          capture_output=True, text=True, timeout=300, cwd=cli.ROOT,
                          env=cli.env())


def _lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _check(got_rows, version_dir, rows):
    expected = helpers.serve(version_dir, **{k: [r[k] for r in rows]
                                             for k in helpers.export_info(version_dir)["inputs"]})
    assert len(got_rows) == len(rows)
    for i, (got, row) in enumerate(zip(got_rows, rows)):
        assert got.pop("row") == i  # aligned with the inputs
        assert got.pop("id", None) == row.get("id")
        assert sorted(got) == sorted(expected)
        for name, values in expected.items():
            value = values[i].decode() if isinstance(values[i], bytes) else values[i]
            if isinstance(value, str) or np.asarray(value).dtype.kind == "i":
                assert got[name] == np.asarray(value).tolist(), name
            else:  # batches of other sizes round float32 sums differently
                np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6,
                                           err_msg=name)


# A SQuAD export built and the command run as a process (~36 s of CPU); the default
# tier runs the command on a GLUE model's own file (below) and api.load in test_api.py.
@pytest.mark.slow
def test_jsonl_file_in_batches_with_the_highest_version(tmp_path, tmp_path_factory):
    version_dir = helpers.exported(tmp_path_factory, "squad_v2")[0]
    root = tmp_path / "exports"
    shutil.copytree(version_dir, root / "12")
    (root / "3").mkdir()
    (root / "3" / "saved_model.pb").write_bytes(b"not a model: loading it would fail")
    source = tmp_path / "questions.jsonl"
    source.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in ROWS) + "\n\n",
                      encoding="utf-8")
    out = tmp_path / "answers.jsonl"
    result = _predict(f"--model={root}", f"--input={source}", f"--output={out}",
                      "--batch_size=2")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout == ""
    # No CUDA probe or oneDNN notes on a CPU machine: nothing went wrong.
    assert not re.search(r"cuda|oneDNN", result.stderr, re.IGNORECASE), result.stderr
    lines = _lines(out.read_text(encoding="utf-8"))
    _check([dict(line) for line in lines], version_dir, ROWS)
    # albert_tf.api.load: the same object, the same answers, for the export and the
    # fine-tuned folder it was made from.
    from albert_tf.commands import api

    assert api.load(root).predict(ROWS, batch_size=2) == lines
    assert api.predict(str(root), [(r["question"], r["context"]) for r in ROWS]) == \
        [{k: v for k, v in line.items() if k != "id"} for line in lines]


@pytest.mark.slow
def test_a_squad_model_folder_answers_as_its_export(tmp_path_factory):
    # (the default tier loads a text classifier's folder: tests/test_api.py)
    from albert_tf.commands import api

    version_dir, model_dir = helpers.exported(tmp_path_factory, "squad_v2")[:2]
    lines = api.load(version_dir).predict(ROWS, batch_size=2)
    for got, line in zip(api.load(model_dir).predict(ROWS), lines):
        assert got["answer"] == line["answer"] and got.get("id") == line.get("id")
        np.testing.assert_allclose(got["null_odds"], line["null_odds"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name,content,error", [
    ("q.tsv", "id\tquestion\tcontent\n1\twho\tx\n", r"q.tsv:2: missing 'context'"),
    ("q.tsv", "question\tcontext\nwho\tx\nwhy\n", r"q.tsv:3: expected 2 fields \(columns "
                                                   r"question, context\), got 1"),
    ("q.jsonl", '{"question": "a", "context": "b"}\n\n{"question": "a", "context": \n',
     r"q.jsonl:3: not JSON \(Expecting value at column 30\)"),
    ("q.jsonl", '{"question": "a", "context": "b"}\n{"question": "a"}\n',
     r"q.jsonl:2: missing 'context' \(the model takes question, context\)"),
    ("q.jsonl", '{"question": "a", "context": 3}\n', r"q.jsonl:1: 'context' must be a string"),
    ("q.jsonl", '["a", "b"]\n', r"q.jsonl:1: expected a JSON object, got an array"),
    ("q.jsonl", b'{"question": "a", "context": "\xff"}\n', r"q.jsonl:1: not UTF-8"),
])
def test_bad_input_names_the_file_and_line(tmp_path, tmp_path_factory, name, content, error):
    version_dir = helpers.exported(tmp_path_factory, "squad")[0]
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    result = _predict(f"--model={version_dir}", f"--input={path}")
    line = cli.one_line_error(result)
    assert line.startswith(f"error: --input: {path}") and re.search(error, line), line


def test_bad_flags_are_one_line_errors(tmp_path, tmp_path_factory):
    version_dir = helpers.exported(tmp_path_factory, "sst2")[0]
    for args, error in (
            ([], "error: missing required flag(s): --model"),
            ([f"--model={tmp_path / 'nothing'}"],
             f"error: --model: {tmp_path / 'nothing'}: no such file or folder"),
            ([f"--model={version_dir}", "--text_a=x", "--input=f.tsv"], "error: give either"),
            ([f"--model={version_dir}", "--question=x"],
             "error: the model takes text, not --question"),
            ([f"--model={version_dir}", "--batch_size=0"], "error: batch_size must be >= 1, got 0"),
            ([f"--model={version_dir}", "--row=[1]"],
             "error: --row: expected a JSON object naming the inputs (text), got list")):
        assert cli.one_line_error(_predict(*args)).startswith(error)


@pytest.mark.slow
def test_flags_stdin_tsv_and_a_finetuned_folder(tmp_path, tmp_path_factory):
    sst2 = helpers.exported(tmp_path_factory, "sst2")
    result = _predict(f"--model={sst2[0]}", "--text_a=A fine film.")
    assert result.returncode == 0, result.stderr[-3000:]
    _check(_lines(result.stdout), sst2[0], [{"text": "A fine film."}])

    stsb = helpers.exported(tmp_path_factory, "stsb")
    rows = [{"text_a": "A cat.", "text_b": "A dog."}, {"id": 1, "text_a": "", "text_b": "x"}]
    result = _predict(f"--model={os.path.dirname(stsb[0])}", "--batch_size=1",
                      stdin="".join(json.dumps(r) + "\n" for r in rows))
    assert result.returncode == 0, result.stderr[-3000:]
    _check(_lines(result.stdout), stsb[0], rows)

    squad = helpers.exported(tmp_path_factory, "squad")
    tsv = tmp_path / "questions.tsv"
    tsv.write_text("\ufeffid\tquestion\tcontext\n" + "".join(
        f"{r.get('id', '')}\t{r['question']}\t{r['context']}\n" for r in ROWS), encoding="utf-8")
    for model in (squad[0], squad[1]):  # the export, then the fine-tuned model/ folder
        result = _predict(f"--model={model}", f"--input={tsv}")
        assert result.returncode == 0, result.stderr[-3000:]
        _check(_lines(result.stdout), squad[0], [dict(r, id=str(r.get("id", ""))) for r in ROWS])
    # albert_tf.api.load on the model folders: the commands' answers (classification,
    # regression), as texts and as pairs.
    from albert_tf.commands import api

    got = api.load(sst2[1]).predict(["A fine film."])
    _check(got, sst2[0], [{"text": "A fine film."}])
    got = api.load(stsb[1]).predict([(r["text_a"], r["text_b"]) for r in rows])
    _check(got, stsb[0], [{k: v for k, v in r.items() if k != "id"} for r in rows])


def _rows(text, name, columns=None, names=("text",)):
    from albert_tf.io_utils import numbered_lines
    from albert_tf.commands.predict import read_rows

    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return [row for _, row in read_rows(numbered_lines(path), path, names, columns=columns)]


def test_predict_reads_rows_as_training_reads_them(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    columns = {"text": "sentence"}
    # CSV and TSV with a header, quoted fields, the training column's name.
    csv_rows = _rows('id,sentence,label\n1,"A fine, long film.",pos\n2,Dull,neg\n', "x.csv",
                     columns)
    assert [(r["id"], r["text"]) for r in csv_rows] == [("1", "A fine, long film."),
                                                        ("2", "Dull")]
    assert _rows("sentence\tlabel\nGood\tpos\n", "x.tsv", columns)[0]["text"] == "Good"
    assert _rows('{"sentence": "Good"}\n', "x.jsonl", columns)[0]["text"] == "Good"
    assert _rows('{"text": "Good"}\n', "x.jsonl", columns)[0]["text"] == "Good"
    with pytest.raises(ValueError, match=r"x.jsonl:1: missing 'text' \(the model takes text; "
                                         r"trained on the columns text: 'sentence'\)"):
        _rows('{"review": "Good"}\n', "x.jsonl", columns)
    with pytest.raises(ValueError, match=r"x.csv:3: expected 2 fields \(columns a, b\), got 1"):
        _rows("a,b\nx,y\nz\n", "x.csv", names=("a",))


def test_native_start_up_notes_are_filtered_and_other_lines_kept(capfd):
    from albert_tf.startup import native_noise_filtered

    with native_noise_filtered():
        os.write(2, b"E0000 cuda_platform.cc:52] failed call to cuInit: UNKNOWN ERROR (303)\n")
        os.write(2, b"I0000 port.cc:153] oneDNN custom operations are on. You may see\n")
        os.write(2, b"a real problem\n")
    assert capfd.readouterr().err == "a real problem\n"


def test_token_classification_output_reads_as_words_and_entities():
    from albert_tf.commands.predictor import _readable, tagged_words

    text = "EU rejects German"
    tags = [b"B-ORG", b"", b"O", b"", b"B-MISC", b""]  # a word's tag on its first token
    spans = [(0, 2), (3, 3), (3, 5), (5, 10), (11, 17), (-1, -1)]  # (3, 3): zero-width
    outputs = {"num_tokens": np.array([5]), "token_tag": np.array([tags]),
               "token_start": np.array([[s for s, _ in spans]]),
               "token_end": np.array([[e for _, e in spans]]),
               "num_entities": np.array([2]),
               "entity_type": np.array([[b"ORG", b"MISC", b""]]),
               "entity_text": np.array([[b"EU", b"German", b""]]),
               "entity_start": np.array([[0, 11, -1]]), "entity_end": np.array([[2, 17, -1]])}
    assert tagged_words(outputs, 0, text) == {
        "words": [{"word": "EU", "tag": "B-ORG", "start": 0, "end": 2},
                  {"word": "rejects", "tag": "O", "start": 3, "end": 10},
                  {"word": "German", "tag": "B-MISC", "start": 11, "end": 17}],
        "entities": [{"type": "ORG", "text": "EU", "start": 0, "end": 2},
                     {"type": "MISC", "text": "German", "start": 11, "end": 17}]}
    raw = _readable(outputs, 0, {"text": text}, raw=True)
    assert raw["num_tokens"] == 5 and raw["token_tag"][1] == ""


def test_a_glue_model_reads_its_own_data_file_by_its_columns(tmp_path):
    """SST-2's dev.tsv names its column `sentence`: the model trained on it takes it."""
    from albert_tf.commands import api
    from conftest import FIXTURES

    predictor = api.load(helpers.finetuned_dir(tmp_path, "sst2")[0])
    assert predictor.columns == {"text": "sentence"}
    dev = os.path.join(FIXTURES, "glue", "SST-2", "dev.tsv")
    got = api.predict(predictor, input=dev)
    with open(dev, encoding="utf-8") as f:
        texts = [line.split("\t")[0] for line in f.read().splitlines()[1:]]
    want = predictor.predict(texts)
    assert len(got) == len(texts) == 2
    assert [g["row"] for g in got] == [w["row"] for w in want] == [0, 1]  # aligned with inputs
    assert [g["label"] for g in got] == [w["label"] for w in want]
    np.testing.assert_allclose([g["probabilities"] for g in got],
                               [w["probabilities"] for w in want], rtol=1e-5)
