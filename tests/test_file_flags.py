"""A file a flag names that cannot be used is one line naming the flag and the file,
whichever module finds it wanting (`albert_tf.input_paths.naming_flags`)."""

import os

import pytest

import cli_helpers as cli
from albert_tf.input_paths import naming_flags


def _raised(error, values, names=("vocab_file", "output_dir")):
    with pytest.raises(type(error)) as caught:
        with naming_flags(values, names):
            raise error
    return caught.value


def test_an_error_quoting_a_flags_path_names_the_flag(tmp_path):
    path = str(tmp_path / "random.bin")
    found = _raised(ValueError(f"{path}: not a vocabulary file"), {"vocab_file": path})
    assert str(found) == f"--vocab_file: {path}: not a vocabulary file"
    # The type is kept (callers of the Python API catch FileExistsError), the path may be
    # quoted absolute, and a flag named already is left alone.
    found = _raised(FileExistsError(17, "File exists", os.path.abspath("out")),
                    {"output_dir": "out"})
    assert isinstance(found, FileExistsError) and str(found).startswith("--output_dir: [Errno 17]")
    named = ValueError(f"--vocab_file: {path}: no such file")
    assert _raised(named, {"vocab_file": path}) is named
    other = ValueError("rte split 'train': no file train.tsv")
    assert _raised(other, {"vocab_file": path}) is other


def test_commands_name_the_flag_of_a_file_they_cannot_use(tmp_path):
    garbage = tmp_path / "random.bin"
    garbage.write_bytes(bytes(range(256))[::-1] * 2)
    text = tmp_path / "text.txt"
    text.write_text("One sentence. Another one.\n", encoding="utf-8")
    made = cli.run("albert_tf.create_pretraining_data", f"--input={text}",
                   f"--vocab_file={garbage}", f"--output={tmp_path}/data")
    assert cli.one_line_error(made).startswith(f"error: --vocab_file: {garbage}: not a "
                                               "vocabulary file")
    inspected = cli.run("albert_tf.inspect", f"--model={garbage}")
    assert cli.one_line_error(inspected).startswith(f"error: --model: {garbage}: not UTF-8")
    blocked = tmp_path / "plain.txt"
    blocked.write_text("a file where a folder would go\n", encoding="utf-8")
    trained = cli.run("albert_tf.tokenizer", "train", f"--input={text}", "--vocab_size=20",
                      f"--output={blocked}/sub/spm")
    assert cli.one_line_error(trained).startswith("error: --output: ")


def test_of_paths_inside_one_another_the_longest_quoted_is_named(tmp_path):
    values = {"export_dir": str(tmp_path), "eval_data": str(tmp_path / "data")}
    found = _raised(FileNotFoundError(f"no such folder {tmp_path / 'data'}"), values,
                    ("export_dir", "eval_data"))
    assert str(found).startswith("--eval_data: no such folder")
    said = FileNotFoundError(f"--eval_data: no such folder {tmp_path / 'data'}")
    assert _raised(said, values, ("export_dir",)) is said  # a flag named at the start


def test_pretraining_records_that_are_not_tfrecords_are_one_line_in_the_ops_words(tmp_path):
    from albert_tf.pretraining.trainer import check_records

    garbage = tmp_path / "train.tfrecord"
    garbage.write_bytes(bytes(range(256))[::-1] * 2)
    with pytest.raises(ValueError) as caught:
        check_records(str(garbage))
    said = str(caught.value)
    assert said.startswith(f"--input_files: {garbage}: not a TFRecord file")
    assert "\n" not in said and "{{" not in said and "[Op:" not in said, said
