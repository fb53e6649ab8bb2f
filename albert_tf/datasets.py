"""Where the fine-tuning data sets come from, and fetching them into the layout the tasks read.

    albert-tf download --dataset=rte --output_dir=data     # -> data/glue/RTE/{train,dev,test}.tsv

| data sets | source | layout written |
|---|---|---|
| GLUE (cola sst2 mrpc stsb qqp mnli qnli rte wnli) | the GLUE benchmark's task archives (MRPC: Microsoft's files and GLUE's dev split) | `glue/<Task>/*.tsv`, as GLUE distributes them |
| SQuAD v1.1, v2.0 (squad, squad_v2) | the SQuAD explorer's JSON files | `squad/{train,dev}-v<version>.json` |
| CLUE (afqmc tnews iflytek cmnli ocnli cluewsc2020 csl), CMRC 2018, CHID | CLUE's public task archives | `clue/<task>/{train,dev,test}.json` (CHID: its `*_answer.json` and `test1.1.json`) |

Each task's declaration says where its data comes from (`tasks.base.Declared.data_source`,
a `DataSource` made by the functions below), and `albert-tf download` gathers
them from the task registry's declarations, without TensorFlow. Each data
set keeps its own licence (GLUE's tasks, SQuAD: CC BY-SA 4.0, CLUE's
tasks); fetching one is agreeing to it. A folder appears complete or not at all.
"""

import dataclasses
import io
import os
import shutil
import tempfile
import urllib.request
import zipfile

from albert_tf.io_utils import atomic_directory
from albert_tf.settings import Settings, setting

GLUE_URL = "https://dl.fbaipublicfiles.com/glue/data/{name}.zip"
MRPC_URLS = {"dev_ids": "https://dl.fbaipublicfiles.com/glue/data/mrpc_dev_ids.tsv",
             "train": "https://dl.fbaipublicfiles.com/senteval/senteval_data/"
                      "msr_paraphrase_train.txt",
             "test": "https://dl.fbaipublicfiles.com/senteval/senteval_data/"
                     "msr_paraphrase_test.txt"}
SQUAD_URL = "https://rajpurkar.github.io/SQuAD-explorer/dataset/{split}-v{version}.json"
CLUE_URL = "https://storage.googleapis.com/cluebenchmark/tasks/{name}_public.zip"


@dataclasses.dataclass(frozen=True)
class DataSource:
    """One data set: `kind` "archive" (a zip holding the split files), "files"
    (`files`: URL -> file name) or "mrpc"; `folder`: where it goes under the root."""

    name: str
    kind: str
    folder: str
    url: str = ""
    files: tuple = ()
    marker: str = "train"  # a file name the archive's data folder holds (its stem)


def glue_source(name, folder):
    """GLUE task `name`'s archive, into `glue/<folder>` (its folder in GLUE's archive)."""
    return DataSource(name, "archive", f"glue/{folder}", GLUE_URL.format(name=folder))


def mrpc_source(name, folder):
    """MRPC: Microsoft's files split by GLUE's dev ids, into `glue/<folder>`."""
    return DataSource(name, "mrpc", f"glue/{folder}")


def squad_source(name, version):
    """SQuAD `version`'s train and dev files, into `squad/`."""
    files = tuple((SQUAD_URL.format(split=split, version=version), f"{split}-v{version}.json")
                  for split in ("train", "dev"))
    return DataSource(name, "files", "squad", files=files)


def clue_source(name):
    """CLUE task `name`'s public archive, into `clue/<name>`."""
    return DataSource(name, "archive", f"clue/{name}", CLUE_URL.format(name=name))


@dataclasses.dataclass(frozen=True, kw_only=True)
class DownloadSettings(Settings):
    """The flags of `albert-tf download`; a bad value raises `ValueError` naming the field."""

    dataset: tuple[str, ...] = setting((), help="Data sets by task name (rte, mnli, squad_v2, "
                                       "afqmc, cmrc2018, ...).")
    checkpoint: tuple[str, ...] = setting((), help="Published checkpoints (albert_base_v2, "
                                          "hf:albert/albert-large-v2, google:albert_base_zh, "
                                          "...).")
    output_dir: str = setting("data", help="Where data sets go.", roles=("writes",))

    def checks(self):
        return [(bool(self.dataset or self.checkpoint),
                 "nothing to download: give --dataset (a task name) or --checkpoint")]


def unknown_datasets(names, sources):
    """`ValueError` if some of `names` are not keys of `sources` (name -> `DataSource`)."""
    unknown = sorted(set(names) - set(sources))
    if unknown:
        raise ValueError(f"unknown data set(s) {', '.join(unknown)}; known: "
                         f"{', '.join(sorted(sources))}")


def fetch_url(url, destination):
    """Downloads `url` into the file `destination` (the network boundary)."""
    with urllib.request.urlopen(url, timeout=60) as response, open(destination, "wb") as out:
        shutil.copyfileobj(response, out)


def fetch_dataset(source, root):
    """Fetches the data set of `source` (a `DataSource`) into `<root>/<its folder>`;
    returns that folder.

    An existing complete folder is kept as it is.
    """
    name = source.name
    target = os.path.join(root, source.folder)
    done = {"files": lambda: all(os.path.isfile(os.path.join(target, n))
                                 for _, n in source.files)}
    if os.path.isdir(target) and done.get(source.kind, lambda: bool(os.listdir(target)))():
        return target
    try:
        with tempfile.TemporaryDirectory() as tmp, atomic_directory(target) as out:
            {"archive": _archive, "files": _files, "mrpc": _mrpc}[source.kind](source, tmp, out)
    except (OSError, zipfile.BadZipFile) as e:
        raise OSError(f"data set {name}: could not fetch it ({type(e).__name__}: "
                      f"{(str(e).splitlines() or [''])[0][:200]}); without network, download "
                      f"it elsewhere and put its files in {target}") from None
    return target


def _archive(source, tmp, out):
    archive = os.path.join(tmp, "data.zip")
    fetch_url(source.url, archive)
    with zipfile.ZipFile(archive) as zipped:
        zipped.extractall(os.path.join(tmp, "x"))
    for folder, _, files in os.walk(os.path.join(tmp, "x")):
        if any(os.path.splitext(f)[0] == source.marker for f in files):
            for f in files:
                shutil.move(os.path.join(folder, f), os.path.join(out, f))
            return
    raise OSError(f"{source.url}: the archive holds no {source.marker} file")


def _files(source, tmp, out):
    for url, file_name in source.files:
        fetch_url(url, os.path.join(out, file_name))


def _mrpc(source, tmp, out):
    """GLUE's MRPC: Microsoft's train file split by GLUE's dev ids; the test file
    re-headed with an index column, its labels dropped."""
    paths = {}
    for key, url in MRPC_URLS.items():
        paths[key] = os.path.join(tmp, key)
        fetch_url(url, paths[key])
    with open(paths["dev_ids"], encoding="utf-8-sig") as f:
        dev_ids = {tuple(line.rstrip("\r\n").split("\t")[:2]) for line in f if line.strip()}
    with open(paths["train"], encoding="utf-8-sig") as f:
        header, *rows = [line.rstrip("\r\n") for line in f if line.strip()]
    splits = {"train": [], "dev": []}
    for row in rows:
        ids = tuple(row.split("\t")[1:3])
        splits["dev" if ids in dev_ids else "train"].append(row)
    for split, lines in splits.items():
        _write_lines(os.path.join(out, f"{split}.tsv"), [header, *lines], bom=True)
    with open(paths["test"], encoding="utf-8-sig") as f:
        _, *rows = [line.rstrip("\r\n") for line in f if line.strip()]
    test = ["index\t#1 ID\t#2 ID\t#1 String\t#2 String"] + [
        f"{i}\t" + "\t".join(row.split("\t")[1:5]) for i, row in enumerate(rows)]
    _write_lines(os.path.join(out, "test.tsv"), test)


def _write_lines(path, lines, bom=False):
    with io.open(path, "w", encoding="utf-8-sig" if bom else "utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
