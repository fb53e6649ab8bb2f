"""`albert-tf download`: data sets fetched into the layout the tasks read (the network faked)."""

import io
import json
import os
import zipfile

import pytest

from albert_tf import tasks
from albert_tf import datasets
from cli_helpers import one_line_error, run
from albert_tf.tasks.sentence_prediction import glue


def _zip(files):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


@pytest.fixture
def web(monkeypatch):
    """A fake network: URL -> bytes; `web.asked` lists the URLs fetched."""
    pages = {}

    def fetch(url, destination):
        pages.setdefault("asked", []).append(url)
        if url not in pages:
            raise OSError("<urlopen error [Errno -3] Temporary failure in name resolution>")
        with open(destination, "wb") as f:
            f.write(pages[url])

    monkeypatch.setattr(datasets, "fetch_url", fetch)
    return pages


def fetch_task(name, root):
    return datasets.fetch_dataset(tasks.data_sources()[name], root)


def test_every_task_with_public_data_has_a_source():
    sources = tasks.data_sources()
    assert set(sources) == {"cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte",
                            "wnli", "squad", "squad_v2", "afqmc", "tnews", "iflytek", "cmnli",
                            "ocnli", "cluewsc2020", "csl", "cmrc2018", "chid"}
    assert all(source.name == name for name, source in sources.items())
    # Each GLUE task's source (in its declaration) lands in its spec row's folder.
    assert sources["sst2"].folder == "glue/SST-2"
    assert all(sources[name].folder == f"glue/{spec.folder}" for name, spec in glue.SPECS.items())
    assert sources["cmrc2018"].folder == "clue/cmrc2018"
    assert len({s.folder for s in sources.values()}) == len(sources) - 1  # squad + squad_v2


def test_a_glue_archive_lands_where_the_task_reads_it(tmp_path, web):
    rows = "index\tsentence1\tsentence2\tlabel\n0\tA man sleeps.\tA man rests.\tentailment\n"
    web[datasets.GLUE_URL.format(name="RTE")] = _zip(
        {"RTE/train.tsv": rows, "RTE/dev.tsv": rows, "RTE/test.tsv": "index\ts1\ts2\n0\ta\tb\n"})
    folder = fetch_task("rte", str(tmp_path))
    assert folder == str(tmp_path / "glue" / "RTE")
    examples = tasks.get("rte").read_examples(folder, "train")
    assert [(e.text_a, e.label) for e in examples] == [("A man sleeps.", "entailment")]
    assert fetch_task("rte", str(tmp_path)) == folder  # kept, not fetched again
    assert len(web["asked"]) == 1


def test_mrpc_is_split_by_glues_dev_ids(tmp_path, web):
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"
    web[datasets.MRPC_URLS["dev_ids"]] = b"11\t12\n"
    web[datasets.MRPC_URLS["train"]] = (
        f"\ufeff{header}\n1\t11\t12\tA b.\tA c.\n0\t21\t22\tD e.\tF g.\n").encode()
    web[datasets.MRPC_URLS["test"]] = f"\ufeff{header}\n1\t31\t32\tH i.\tJ k.\n".encode()
    folder = fetch_task("mrpc", str(tmp_path))
    spec = glue.get_spec("mrpc")
    assert [e.text_a for e in glue.read_examples(spec, folder, "train")] == ["D e."]
    assert [(e.text_a, e.label) for e in glue.read_examples(spec, folder, "dev")] == [
        ("A b.", "1")]
    test = glue.read_examples(spec, folder, "test")
    assert [(e.guid, e.text_a, e.text_b) for e in test] == [("0", "H i.", "J k.")]


def test_squad_and_clue_files(tmp_path, web):
    for split in ("train", "dev"):
        web[datasets.SQUAD_URL.format(split=split, version="2.0")] = json.dumps(
            {"version": "v2.0", "data": []}).encode()
    assert sorted(os.listdir(fetch_task("squad_v2", str(tmp_path)))) == [
        "dev-v2.0.json", "train-v2.0.json"]
    web[datasets.CLUE_URL.format(name="afqmc")] = _zip(
        {"train.json": "{}\n", "dev.json": "{}\n", "test.json": "{}\n"})
    assert sorted(os.listdir(fetch_task("afqmc", str(tmp_path)))) == [
        "dev.json", "test.json", "train.json"]


def test_clues_chid_archive_lands_where_the_task_reads_it(tmp_path, web):
    from albert_tf.tasks.chid.data import read_chid

    line = json.dumps({"candidates": ["一心一意", "三心二意"], "content": ["甲#idiom000007#乙"]},
                      ensure_ascii=False)
    web[datasets.CLUE_URL.format(name="chid")] = _zip(
        {"chid/train.json": line + "\n", "chid/train_answer.json": '{"#idiom000007#": 1}',
         "chid/test1.1.json": line + "\n"})
    folder = fetch_task("chid", str(tmp_path))
    assert folder == str(tmp_path / "clue" / "chid")
    assert [(b.key, b.label) for b in read_chid(folder, "train")] == [("#idiom000007#", 1)]


def test_without_network_one_line_says_what_and_where(tmp_path, web):
    with pytest.raises(OSError) as raised:
        fetch_task("qnli", str(tmp_path))
    message = str(raised.value)
    assert message.startswith("data set qnli: could not fetch it (OSError: <urlopen error")
    assert f"put its files in {tmp_path}/glue/QNLI" in message
    assert not (tmp_path / "glue" / "QNLI").exists()  # nothing half-written


def test_the_command_says_what_to_give():
    # An unknown name: tests/test_light_start.py (one line, before TensorFlow).
    result = run("albert_tf.download")
    assert one_line_error(result).startswith("error: nothing to download: give --dataset")
