"""Fetching published ALBERT checkpoints into a local cache.

A checkpoint name has a source prefix:

- `hf:<repo_id>`, e.g. `hf:albert/albert-base-v2` (Hugging Face hub; the
  weights, config and vocabulary only);
- `google:<name>`, e.g. `google:albert_base_v2` (Google's tar.gz release);
- `keras_hub:<preset>`, e.g. `keras_hub:albert_base_en_uncased` (Kaggle);
- `brightmart:<name>`, e.g. `brightmart:albert_tiny` (brightmart/albert_zh's zip).

A bare name from `PUBLISHED` (e.g. `albert_base_v2`, `albert_base_zh`,
`albert_chinese_tiny`) stands for one of those. Hugging Face repositories
that hold no safetensors (many Chinese ones) are fetched with their
`pytorch_model.bin`, which albert_tf reads without PyTorch. Local paths are
returned unchanged. The cache lives in `$ALBERT_TF_CACHE` (default
`~/.cache/albert_tf`).
"""

import os
import shutil
import tarfile
import tempfile
import urllib.request
import zipfile

from albert_tf import extras
from albert_tf.checkpoints.weights import CheckpointError
from albert_tf.io_utils import atomic_directory
from albert_tf.published import PUBLISHED, SOURCES, cache_dir, is_published_name  # noqa: F401
from albert_tf.tokenizer.base import vocabulary_file_names

GOOGLE_URL = "https://storage.googleapis.com/albert_models/{name}.tar.gz"
BRIGHTMART_URL = "https://storage.googleapis.com/albert_zh/{name}.zip"
# The weights and config; the vocabulary files come from `albert_tf.tokenizer`.
HF_PATTERNS = ["config.json", "model.safetensors", "model.safetensors.index.json",
               "model-*.safetensors", "tokenizer_config.json"]
# Fetched only when a repository has no safetensors.
HF_TORCH_PATTERNS = ["pytorch_model.bin", "pytorch_model.bin.index.json",
                     "pytorch_model-*.bin"]


def resolve(path):
    """A local folder (or TF1 prefix) for `path`, downloading it if it is a name."""
    if os.path.exists(path) or os.path.exists(path + ".index"):
        return path
    source, sep, name = path.partition(":")
    if not sep and path in PUBLISHED:
        source, _, name = PUBLISHED[path].partition(":")
    elif not sep:
        raise CheckpointError(
            f"{path}: no such file or folder, and not a published checkpoint name "
            f"(known: {sorted(PUBLISHED)}, or prefix a name with hf:, google:, "
            "keras_hub: or brightmart:)")
    fetchers = {"hf": fetch_hf, "google": fetch_google, "keras_hub": fetch_keras_hub,
                "brightmart": fetch_brightmart}
    if source not in fetchers:
        raise CheckpointError(f"{path}: unknown source {source!r}; use one of {sorted(fetchers)}")
    try:
        return fetchers[source](name)
    except CheckpointError:
        raise
    except Exception as e:  # every client has its own errors: all mean "not fetched"
        reason = (str(e).strip().splitlines() or [""])[0][:200]
        raise CheckpointError(
            f"{path}: could not fetch {_what(source, name)} ({type(e).__name__}: {reason}); "
            f"the cache {cache_dir()} does not hold it either. Without network, download it "
            "on another machine and pass its folder instead, e.g. "
            "--init_checkpoint=path/to/albert_base_v2") from None


def _what(source, name):
    """What a source name stands for, as a user can fetch it by hand."""
    if source == "hf":
        return f"the Hugging Face repository {name} (https://huggingface.co/{name})"
    if source == "google":
        return GOOGLE_URL.format(name=name)
    if source == "brightmart":
        return BRIGHTMART_URL.format(name=name)
    return f"the keras-hub preset {name} (from Kaggle)"


def fetch_hf(repo_id):
    import huggingface_hub  # Only needed to download.

    def snapshot(patterns):
        return huggingface_hub.snapshot_download(
            repo_id=repo_id, allow_patterns=patterns, cache_dir=os.path.join(cache_dir(), "hf"))

    folder = snapshot(HF_PATTERNS + vocabulary_file_names())
    if not any(f.endswith(".safetensors") for f in _listing(folder)):
        folder = snapshot(HF_TORCH_PATTERNS)  # the same snapshot folder, the .bin added
    return folder


def _listing(folder):
    return os.listdir(folder) if os.path.isdir(folder) else []


def _fetch_url(url, destination):
    with urllib.request.urlopen(url) as response, open(destination, "wb") as out:
        shutil.copyfileobj(response, out)


def _fetch_archive(url, target, unpack):
    """Downloads the archive at `url` and unpacks it into the folder `target`,
    unless `target` already exists (the cache); `unpack(archive, folder)`."""
    if not os.path.isdir(target):
        with tempfile.TemporaryDirectory() as tmp:
            archive = os.path.join(tmp, url.rsplit("/", 1)[-1])
            _fetch_url(url, archive)
            with atomic_directory(target) as unpacked:
                unpack(archive, unpacked)


def _untar(archive, folder):
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")


def _unzip(archive, folder):
    # zipfile drops absolute and ".." parts of member names.
    with zipfile.ZipFile(archive) as zipped:
        zipped.extractall(folder)


def fetch_google(name):
    """Downloads and unpacks Google's `<name>.tar.gz`; returns its model folder."""
    target = os.path.join(cache_dir(), "google", name)
    _fetch_archive(GOOGLE_URL.format(name=name), target, _untar)
    return _folder_with(target, "albert_config.json")


def fetch_brightmart(name):
    """Downloads and unpacks brightmart/albert_zh's `<name>.zip`; returns its model folder."""
    target = os.path.join(cache_dir(), "brightmart", name)
    _fetch_archive(BRIGHTMART_URL.format(name=name), target, _unzip)
    for folder, _, files in os.walk(target):
        if any(f.endswith(".index") and ".ckpt" in f for f in files):
            return folder
    raise CheckpointError(f"{target}: the download holds no TF1 checkpoint (*.ckpt*.index)")


def _folder_with(root, filename):
    for folder, _, files in os.walk(root):
        if filename in files:
            return folder
    raise CheckpointError(f"{root}: the download holds no {filename}")


def fetch_keras_hub(preset):
    keras_hub = extras.load("keras-hub", f"keras_hub:{preset}")
    import kagglehub  # keras-hub's own download path (installed with keras-hub)

    presets = keras_hub.models.AlbertBackbone.presets
    if preset not in presets:
        raise CheckpointError(f"unknown keras-hub ALBERT preset {preset!r}; "
                              f"known: {sorted(presets)}")
    handle = presets[preset]["kaggle_handle"]
    return kagglehub.model_download(handle.removeprefix("kaggle://"))
