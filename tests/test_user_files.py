"""The user's own data files (tasks/user_files.py): formats, streaming, and errors that
name the file and line. Imports no TensorFlow."""

import csv
import io
import json
import types

import pytest

from albert_tf.tasks import user_files
from albert_tf.tasks.user_files import FileOptions, check_columns, read_rows, split_file


def _write(path, content):
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return str(path)


def _values(path, fmt="auto"):
    return [(row.line, row.values) for row in read_rows(path, fmt)]


def _error(path, fmt="auto"):
    with pytest.raises(ValueError) as info:
        list(read_rows(path, fmt))
    assert "\n" not in str(info.value)
    return str(info.value)


def test_format_by_extension_or_flag(tmp_path):
    rows = [{"text": "a, b", "label": "x"}, {"text": 'say "hi"', "label": "y"}]
    buffer = io.StringIO()
    csv.DictWriter(buffer, ["text", "label"]).writerows([{"text": "text", "label": "label"},
                                                         *rows])
    csv_path = _write(tmp_path / "d.csv", buffer.getvalue())
    tsv_path = _write(tmp_path / "d.tsv", "text\tlabel\na, b\tx\nsay hi\ty\n")
    jsonl = "".join(json.dumps(r) + "\n" for r in rows)
    json_path = _write(tmp_path / "d.jsonl", jsonl)
    assert _values(csv_path) == [(2, rows[0]), (3, rows[1])]
    assert [v for _, v in _values(tsv_path)] == [rows[0], {"text": "say hi", "label": "y"}]
    assert _values(json_path) == [(1, rows[0]), (2, rows[1])]
    # --format wins over the extension; an unknown extension asks for it.
    other = _write(tmp_path / "data.txt", jsonl)
    assert _values(other, "jsonl") == _values(json_path)
    assert _error(other) == f"{other}: cannot tell the format from the extension '.txt'; " \
        "name it with --format=csv|tsv|jsonl"
    assert user_files.file_format("X.NDJSON") == "jsonl"
    assert user_files.file_format("x.json") == "jsonl"


def test_read_rows_is_a_generator_that_streams(tmp_path):
    path = _write(tmp_path / "d.jsonl", '{"a": 1}\nnot json\n')
    rows = read_rows(path)
    assert isinstance(rows, types.GeneratorType)
    assert next(rows).values == {"a": 1}  # the bad line 2 is not read yet
    with pytest.raises(ValueError, match=r"d.jsonl:2: not JSON"):
        next(rows)


def test_quoted_multi_line_fields_start_on_their_line(tmp_path):
    content = 'text,label\n"first\nsecond\nthird",a\nplain,b\n\n"x, ""y""",c\n'
    path = _write(tmp_path / "d.csv", content)
    assert _values(path) == [(2, {"text": "first\nsecond\nthird", "label": "a"}),
                             (5, {"text": "plain", "label": "b"}),
                             (7, {"text": 'x, "y"', "label": "c"})]
    # The row of a field-count error is named by the line it starts on.
    bad = _write(tmp_path / "bad.csv", 'text,label\n"two\nlines",a\nthree,fields,here\n')
    assert _error(bad) == f"{bad}:4: expected 2 fields (columns text, label), got 3"


def test_byte_order_mark_and_crlf(tmp_path):
    path = _write(tmp_path / "d.tsv", b"\xef\xbb\xbftext\tlabel\r\nhello\tx\r\n")
    assert _values(path) == [(2, {"text": "hello", "label": "x"})]
    path = _write(tmp_path / "d.jsonl", b'\xef\xbb\xbf{"text": "hi"}\r\n\r\n{"text": "yo"}\r\n')
    assert _values(path) == [(1, {"text": "hi"}), (3, {"text": "yo"})]


def test_invalid_utf8_names_its_line(tmp_path):
    path = _write(tmp_path / "d.csv", b"text,label\nfine,a\ncaf\xc3,b\n")
    assert _error(path) == f"{path}:3: not UTF-8 (invalid continuation byte at byte 3)"
    path = _write(tmp_path / "d.jsonl", b'{"text": "ok"}\n{"text": "\xff"}\n')
    assert _error(path) == f"{path}:2: not UTF-8 (invalid start byte at byte 10)"


def test_json_lines_errors_name_the_line(tmp_path):
    path = _write(tmp_path / "d.jsonl", '{"text": "a"}\n\n[1, 2]\n')
    assert _error(path) == f"{path}:3: expected a JSON object, got an array"
    path = _write(tmp_path / "d.jsonl", '{"text": "a",\n')
    assert _error(path).startswith(f"{path}:1: not JSON (Expecting property name")


def test_missing_column_names_the_file_and_its_columns(tmp_path):
    path = _write(tmp_path / "d.csv", "sentence,stars\nhi,5\n")
    row = next(read_rows(path))
    check_columns(path, row, ["sentence", None, "stars"])
    with pytest.raises(ValueError) as info:
        check_columns(path, row, ["text", None, "label"])
    assert str(info.value) == f"{path}: no column 'text', 'label'; it has 'sentence', 'stars'"
    assert user_files.columns_of(path) == ["sentence", "stars"]


def test_empty_files_have_no_rows(tmp_path):
    assert _values(_write(tmp_path / "e.csv", "")) == []
    assert _values(_write(tmp_path / "h.csv", "text,label\n")) == []
    assert _values(_write(tmp_path / "e.jsonl", "\n\n")) == []
    assert user_files.columns_of(str(tmp_path / "e.csv")) == []


def test_split_file_names_the_flag(tmp_path):
    _write(tmp_path / "train.csv", "text,label\n")
    options = FileOptions(train_file="train.csv", eval_file="missing.csv")
    assert split_file(options, str(tmp_path), "train", "t") == str(tmp_path / "train.csv")
    with pytest.raises(ValueError, match=r"^--eval_file=.*missing.csv: no such file$"):
        split_file(options, str(tmp_path), "dev", "t")
    with pytest.raises(ValueError, match="task 't' reads its test split from --predict_file; "
                                         "none given"):
        split_file(options, str(tmp_path), "test", "t")
    with pytest.raises(ValueError, match="task 't' has no split 'validation'"):
        split_file(options, None, "validation", "t")
    with pytest.raises(ValueError, match="format"):
        FileOptions(format="xml")
