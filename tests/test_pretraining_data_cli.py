"""`python -m albert_tf.create_pretraining_data`: a run, its summary, determinism, errors."""

import os
import re

import pytest

from cli_helpers import SPM, one_line_error, run
from conftest import FIXTURES

MODULE = "albert_tf.create_pretraining_data"
LEDGER = os.path.join(FIXTURES, "pretraining", "ledger_gutenberg.txt")


def args(output, *extra):
    return [f"--input={LEDGER}", f"--spm_model={SPM}", f"--output={output}",
            "--input_format=prose", "--max_seq_length=48", "--max_predictions_per_seq=8",
            "--dupe_factor=4", "--num_shards=2", *extra]


@pytest.mark.slow  # two runs of the command; default tier:
# test_pretraining_data_records.py's test_pipeline_is_determined_by_the_seed
def test_run_prints_summary_and_is_byte_identical_across_processes(tmp_path):
    outputs = []
    for name, hash_seed in (("a", "1"), ("b", "2")):
        result = run(MODULE, *args(tmp_path / name / "books"), PYTHONHASHSEED=hash_seed)
        assert result.returncode == 0, result.stderr
        files = sorted(os.listdir(tmp_path / name))
        assert files == ["books-00000-of-00002.tfrecord", "books-00001-of-00002.tfrecord"]
        outputs.append([(tmp_path / name / f).read_bytes() for f in files])
    assert outputs[0] == outputs[1]
    lines = result.stdout.splitlines()
    assert lines[0] == "read 1 file(s) as prose"
    assert lines[1] == "documents:  3 per pass x 4 passes (dupe_factor)"
    for start in ("instances:", "tokens:", "masked:", "n-grams:", "throughput:"):
        assert any(line.startswith(start) for line in lines), (start, result.stdout)
    masked = re.search(r"mask (\d+\.\d)%, random (\d+\.\d)%, kept (\d+\.\d)%", result.stdout)
    assert masked, result.stdout  # the 80/10/10 split of ~200 masked tokens
    assert 70 < float(masked[1]) < 90 and 3 < float(masked[2]) < 17 and 3 < float(masked[3]) < 17
    assert "1 word " in result.stdout
    # The progress line (not a terminal): documents of every pass, with the total.
    assert re.search(r"create pretraining data: (\d+)/\1 documents", result.stderr)


@pytest.mark.parametrize("make_args, expected", [
    (lambda tmp: [f"--input={tmp}/none*.txt", f"--spm_model={SPM}", f"--output={tmp}/o"],
     "error: --input: {tmp}/none*.txt: no such file or folder"),
    (lambda tmp: [f"--input={LEDGER}", f"--spm_model={tmp}/no.model", f"--output={tmp}/o"],
     "error: --vocab_file: {tmp}/no.model: no such file or folder"),
    (lambda tmp: [f"--input={LEDGER}", f"--spm_model={LEDGER}", f"--output={tmp}/o"],
     "error: {ledger}: not a vocabulary file; expected a SentencePiece model (.model)"),
    (lambda tmp: args(f"{tmp}/o", "--max_seq_length=4"),
     "error: max_seq_length must be >= 5 ([CLS] a [SEP] b [SEP]), got 4"),
    (lambda tmp: [f"--input={LEDGER}"], "error: missing required flag(s): --vocab_file, --output"),
])
def test_user_errors_are_one_line(tmp_path, make_args, expected):
    result = run(MODULE, *make_args(tmp_path), timeout=120)
    line = one_line_error(result)
    assert line.startswith(expected.format(tmp=tmp_path, ledger=LEDGER)), line
    assert not list(tmp_path.iterdir())


def test_bad_input_text_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"One sentence.\nAnother.\n\n\x80oops\n")
    result = run(MODULE, f"--input={bad}", f"--spm_model={SPM}", f"--output={tmp_path}/o")
    assert one_line_error(result).startswith(f"error: --input: {bad}:4: not UTF-8 (")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt"]
