"""Files in and out: writing so that a failure never leaves half a file or
folder, and reading text and JSON lines so that an error names its line."""

import contextlib
import csv
import dataclasses
import fcntl
import glob
import json
import os
import shutil
import socket
import tempfile

from albert_tf.errors import RunStopped


@contextlib.contextmanager
def atomic_directory(path, overwrite=True):
    """Yields a temporary folder beside `path` that becomes `path` on success.

    If the body raises, the temporary folder is removed and `path` is left as
    it was. An existing `path` is replaced only once the new one is complete.
    """
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"{path} already exists")
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.tmp-", dir=parent)
    try:
        yield tmp
        share_tree(tmp)
        if not overwrite:
            with folder_lock(parent):
                place_new(tmp, path)
        elif os.path.exists(path):
            old = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.old-", dir=parent)
            os.replace(path, os.path.join(old, "x"))
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def share_tree(path):
    """Gives the folder `path` and everything in it the modes the umask gives
    new files (0755 / 0644 under the usual 022): `mkdtemp`, `mkstemp` and some
    writers make them private, and a server running as another user must read them."""
    mask = _umask()
    os.chmod(path, 0o777 & ~mask)
    for root, folders, files in os.walk(path):
        for name in folders:
            os.chmod(os.path.join(root, name), 0o777 & ~mask)
        for name in files:
            file = os.path.join(root, name)
            executable = os.stat(file).st_mode & 0o111
            os.chmod(file, (0o666 | executable) & ~mask)


LOCK_FILE = ".lock"  # hold_folder's


@contextlib.contextmanager
def folder_lock(folder):
    """Holds an exclusive lock on `folder` (an `flock` on the folder itself, waiting
    for another holder) for a short step such as choosing a name and renaming into
    it; nothing is written, and the kernel drops it when its process ends."""
    os.makedirs(folder, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


class FolderBusy(RunStopped):
    """Another live process holds the folder (`hold_folder`)."""


_HELD = {}  # realpath -> the open lock file of a folder this process holds


def hold_folder(folder, what):
    """Takes `folder` for this process until it ends, or raises `FolderBusy`
    naming the process that holds it (`what` names the setting to change).

    The lock is an `flock` on `<folder>/.lock`, which records the holder's pid
    and host for the message; the kernel drops it with its process, however that
    ends (a killed run leaves nothing held). Taking a folder twice in one
    process is one hold.
    """
    os.makedirs(folder, exist_ok=True)
    key = os.path.realpath(folder)
    if key in _HELD:
        return
    f = open(os.path.join(folder, LOCK_FILE), "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        holder = f.read().strip() or "another process"
        f.close()
        raise FolderBusy(f"{folder} is in use by {holder}; wait for it to end or choose "
                         f"another {what}") from None
    f.seek(0)
    f.truncate()
    f.write(f"process {os.getpid()} on {socket.gethostname()}\n")
    f.flush()
    _HELD[key] = f


def release_folders():
    """Lets go of every folder this process holds (`hold_folder`), at once: a
    process ending takes seconds to tear TensorFlow down, and the same command
    run again meanwhile must find the folder free."""
    while _HELD:
        _, f = _HELD.popitem()
        try:
            fcntl.flock(f, fcntl.LOCK_UN)
        finally:
            f.close()


def place_new(tmp, path):
    """Renames the folder `tmp` to `path`, which must not exist (call under a
    `folder_lock` of their parent: the check and the rename are one step)."""
    if os.path.lexists(path):
        raise FileExistsError(f"{path} already exists")
    os.rename(tmp, path)


@contextlib.contextmanager
def atomic_file(path, mode="w", **kwargs):
    """Opens a temporary file beside `path`, renamed over `path` on success."""
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.tmp-", dir=parent)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual mode
    try:
        with open(tmp, mode, **kwargs) as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def decoded_lines(raw_lines, name):
    """`(line number, text)` of each line of a binary stream, line ends kept;
    a byte-order mark on the first line is dropped.

    Decoded line by line (not by a text-mode file, which decodes ahead in
    blocks), so that an encoding error is a `ValueError` naming the line
    (`name:line: not UTF-8 (...)`); split on b"\\n" only, so that a U+2028
    or a stray "\\r" inside a text does not start a new line.
    """
    for number, raw in enumerate(raw_lines, start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{name}:{number}: not UTF-8 ({e.reason} at byte "
                             f"{e.start})") from None
        yield number, text.removeprefix("\ufeff") if number == 1 else text


def numbered_lines(path):
    """`decoded_lines` of the file at `path`."""
    with open(path, "rb") as f:
        yield from decoded_lines(f, path)


def read_text(path):
    """The whole UTF-8 text of `path` (a byte-order mark dropped); an encoding
    error is a `ValueError` naming the line."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        line_start = raw.rfind(b"\n", 0, e.start) + 1
        line = raw.count(b"\n", 0, e.start) + 1
        raise ValueError(f"{path}:{line}: not UTF-8 ({e.reason} at byte "
                         f"{e.start - line_start})") from None


JSON_KINDS = {str: "a string", int: "an integer", float: "a number", list: "an array",
               dict: "an object", bool: "a boolean", type(None): "null"}


def json_kind(value):
    """How JSON names the kind of a parsed value ("an array", "a string", ...)."""
    return JSON_KINDS.get(type(value), type(value).__name__)


def json_field(row, name, kind, where):
    """`row[name]` of type `kind`; a missing or mistyped field names file, line and field.

    `name` may be a dotted path into nested objects ("target.span1_text").
    """
    value = row
    for i, key in enumerate(name.split(".")):
        if not isinstance(value, dict):
            raise ValueError(f"{where}: field {'.'.join(name.split('.')[:i])!r}: expected "
                             f"an object, got {json_kind(value)}")
        if key not in value:
            raise ValueError(f"{where}: missing field {name!r}")
        value = value[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(f"{where}: field {name!r}: expected {JSON_KINDS[kind]}, got "
                         f"{json_kind(value)}")
    return value


def read_json(path):
    """Reads a JSON file; a parse error names the file, line and column."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at byte "
                         f"{e.start})") from None


def json_objects(lines, name):
    """`(line number, object)` of each non-blank line of JSON lines, from
    `(line number, text)` pairs (`decoded_lines`); a line that is not one JSON
    object is a `ValueError` naming `name:line`."""
    for number, text in lines:
        if not text.strip():
            continue
        try:
            value = json.loads(text.rstrip("\r\n"))  # an error column within the line
        except json.JSONDecodeError as e:
            raise ValueError(f"{name}:{number}: not JSON ({e.msg} at column {e.colno})") \
                from None
        if not isinstance(value, dict):
            raise ValueError(f"{name}:{number}: expected a JSON object, got "
                             f"{json_kind(value)}")
        yield number, value


def chunks(items, size):
    """Lists of at most `size` consecutive items of an iterable (a stream of
    rows read and processed a chunk at a time)."""
    chunk = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


# Row files: CSV or TSV with a header row, or JSON lines; "auto" is by extension.
ROW_FORMATS = ("auto", "csv", "tsv", "jsonl")
ROW_EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl",
                  ".ndjson": "jsonl"}


@dataclasses.dataclass(frozen=True)
class Row:
    """One data row: its values by column name, and where it is (`file:line`)."""

    values: dict
    where: str
    line: int


def row_format(name, given="auto", default=None):
    """`given`, or for "auto" the format `name`'s extension says (`default` when
    it says none, else a `ValueError` asking for `--format`)."""
    if given != "auto":
        return given
    extension = os.path.splitext(name)[1].lower()
    if extension in ROW_EXTENSIONS:
        return ROW_EXTENSIONS[extension]
    if default is not None:
        return default
    raise ValueError(f"{name}: cannot tell the format from the extension "
                     f"{extension or '(none)'!r}; name it with --format="
                     f"{'|'.join(ROW_FORMATS[1:])}")


def read_rows(lines, name, fmt):
    """Yields the `Row`s of a row file, streaming, from `(line number, text)`
    pairs (`decoded_lines`, `numbered_lines`); `fmt`: "csv", "tsv" or "jsonl".

    Every reader of rows (training files, `predict --input`, stdin) reads them
    here, so that what trains can be predicted. CSV/TSV: the first row names
    the columns; a row with another number of fields is an error naming its
    line. JSON lines: each non-blank line is one object.
    """
    if fmt == "jsonl":
        for number, value in json_objects(lines, name):
            yield Row(value, f"{name}:{number}", number)
    else:
        yield from _delimited_rows(lines, name, "," if fmt == "csv" else "\t")


def _delimited_rows(lines, name, delimiter):
    reader = csv.reader((text for _, text in lines), delimiter=delimiter)
    header, previous = None, 0
    try:
        for fields in reader:
            # The line the row starts on (a quoted field may span several lines).
            start, previous = previous + 1, reader.line_num
            if not fields or fields == [""]:
                continue  # a blank line
            if header is None:
                header = [field.strip() for field in fields]
                continue
            where = f"{name}:{start}"
            if len(fields) != len(header):
                raise ValueError(f"{where}: expected {len(header)} fields (columns "
                                 f"{', '.join(header)}), got {len(fields)}")
            yield Row(dict(zip(header, fields)), where, start)
    except csv.Error as e:
        raise ValueError(f"{name}:{reader.line_num}: {e}") from None


def expand_inputs(patterns, flag="--input"):
    """The files named by `patterns` (paths or globs; given as `flag`), in order,
    without repeats.

    Raises:
        ValueError: no pattern given, or a pattern matches no file.
        OSError: a matched file cannot be read.
    """
    if not patterns:
        raise ValueError("no input files given")
    files = []
    for pattern in patterns:
        matches = sorted(p for p in glob.glob(pattern) if os.path.isfile(p))
        if not matches:
            raise ValueError(f"{flag}: no file matches {pattern!r}")
        files += [m for m in matches if m not in files]
    for path in files:
        if not os.access(path, os.R_OK):
            raise PermissionError(f"{path}: cannot read the input file (permission denied)")
    return files
