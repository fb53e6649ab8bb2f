"""The export root as a server and later exports find it: only ASCII-digit names
are versions, the temporary folders of killed exporters are removed, and a full
disk during an export is one line naming the folder and the space it needs."""

import errno
import fcntl
import logging
import os

import pytest

from albert_tf.export import exporter
from albert_tf.serving import versions


def _root(tmp_path):
    root = tmp_path / "exp"
    for name in ("1", "12", "\u00b2", "\u0663", "v3", ".4.tmp-x"):
        (root / name).mkdir(parents=True)
        (root / name / "saved_model.pb").write_bytes(b"x")
    return root


def test_only_ascii_digit_folders_are_versions(tmp_path, caplog):
    root = _root(tmp_path)
    assert exporter.versions(str(root)) == [1, 12]
    assert exporter.check_version(str(root)) == (13, str(root / "13"))
    with caplog.at_level(logging.WARNING, "albert_tf.serve"):
        assert sorted(versions.versions(str(root))) == [1, 12]
        assert sorted(versions.versions(str(root))) == [1, 12]
    logged = [r.getMessage() for r in caplog.records]
    assert sorted(m.split(":")[0] for m in logged) == sorted(
        str(root / n) for n in ("\u00b2", "\u0663", "v3"))  # each once, by name
    assert versions.resolve(str(root / "\u00b2")) == (str(root / "\u00b2"),
                                                     (1, str(root / "\u00b2")))


def test_temporary_folders_of_dead_exporters_are_removed_live_ones_kept(tmp_path):
    root = tmp_path / "exp"
    for name in (".3.tmp-dead", ".4.tmp-live", "2"):
        (root / name).mkdir(parents=True)
        (root / name / "variables").mkdir()
    live = os.open(root / ".4.tmp-live", os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(live, fcntl.LOCK_EX)  # as a running export holds its folder
        exporter.write_export(None, {"version": 5}, str(root / "5"))
        assert sorted(os.listdir(root)) == [".4.tmp-live", "2", "5"]
    finally:
        os.close(live)
    assert exporter.remove_stale_folders(str(root)) == [".4.tmp-live"]


@pytest.fixture(autouse=True)
def _tiny_writer(monkeypatch):
    def write(module, info, tmp, *args):
        with open(os.path.join(tmp, "saved_model.pb"), "wb") as f:
            f.write(b"x" * 3000)
        exporter.write_info(info, tmp)
    monkeypatch.setattr(exporter, "_write_files", write)


def test_a_full_disk_during_an_export_is_one_line_naming_folder_and_space(tmp_path,
                                                                          monkeypatch):
    root = tmp_path / "exp"

    def full(module, info, tmp, *args):
        with open(os.path.join(tmp, "saved_model.pb"), "wb") as f:
            f.write(b"x" * (3 * 2**20))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(exporter, "_write_files", full)
    with pytest.raises(exporter.ExportWriteFailed) as e:
        exporter.write_export(None, {"version": 1}, str(root / "1"))
    message = str(e.value)
    assert "\n" not in message and message.startswith(
        f"{root / '1'}: no space left for the export (it needs about 3.0 MiB free, ")
    assert os.listdir(root) == []
    monkeypatch.setattr(exporter, "_write_files", lambda *a: (_ for _ in ()).throw(
        OSError(errno.EACCES, "Permission denied")))
    with pytest.raises(PermissionError):  # not a full disk: as it was
        exporter.write_export(None, {"version": 1}, str(root / "1"))
