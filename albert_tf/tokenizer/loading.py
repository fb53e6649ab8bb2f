"""`load_tokenizer`: the tokenizer of a checkpoint folder, model folder, vocabulary
file or published checkpoint name (`albert_tf.load_tokenizer`).

Imports nothing heavy for a local path: a program checks its vocabulary before
TensorFlow loads. Only a published name loads `albert_tf.checkpoints.download`.
"""

import os

from albert_tf.io_utils import read_json
from albert_tf.tokenizer.base import TOKENIZER_CONFIG, get_type, vocabulary_types

# What an albert_tf model folder records about its vocabulary (see `base.save_vocabulary`).
NATIVE_CONFIG = "albert_tf_config.json"


def load_tokenizer(path, host=False, lowercase=None):
    """The tokenizer that belongs to `path`.

    Args:
        path: a vocabulary file (a SentencePiece `.model`, ...); a checkpoint
            folder of any format `load_pretrained` reads (or a TF1 prefix);
            a fine-tuned / pretrained albert_tf model folder, which records
            its vocabulary; or a published checkpoint name (fetched into the
            cache, see `albert_tf.checkpoints.download`).
        host: the host form (plain Python, for featurization) instead of the
            in-graph Keras layer.
        lowercase: force the casing; None: the folder's record, else
            `do_lower_case` in its `tokenizer_config.json`, else detected
            from the vocabulary.

    Raises:
        FileNotFoundError / ValueError, naming the path and what was looked for.
    """
    if not os.path.exists(path) and not os.path.isfile(path + ".index"):
        from albert_tf.checkpoints import download

        if download.is_published_name(path):
            path = download.resolve(path)
    kind, file, recorded = find_vocabulary(path)
    vocabulary_type = get_type(kind)
    casing = recorded if lowercase is None else lowercase
    return vocabulary_type.host(file, casing) if host else vocabulary_type.graph(file, casing)


def find_vocabulary(path):
    """`(type name, vocabulary file, lowercase or None)` of `path` (see `load_tokenizer`)."""
    if not os.path.exists(path) and not os.path.isfile(path + ".index"):
        raise FileNotFoundError(f"vocabulary file not found: {path}")
    if os.path.isfile(path):
        return _file_type(path), path, None
    folder = path if os.path.isdir(path) else os.path.dirname(path)  # a TF1 prefix
    recorded = _recorded(folder)
    if recorded is not None:
        return recorded
    for vocabulary_type in vocabulary_types().values():
        found = vocabulary_type.find_in_folder(folder)
        if found:
            return vocabulary_type.name, found, _hf_casing(folder)
    names = [n for t in vocabulary_types().values() for n in t.folder_files]
    raise FileNotFoundError(f"{folder}: no vocabulary in the folder (looked for "
                            f"{', '.join(names)}); pass the vocabulary file (--vocab_file)")


def _file_type(path):
    types = vocabulary_types().values()
    for vocabulary_type in types:
        if vocabulary_type.recognizes(path):
            return vocabulary_type.name
    raise ValueError(f"{path}: not a vocabulary file; expected "
                     f"{' or '.join(t.description for t in types)}")


def _recorded(folder):
    """The vocabulary an albert_tf folder records, or None (another format, or an old folder)."""
    config = os.path.join(folder, NATIVE_CONFIG)
    record = _json_field(config, "vocabulary")
    if record is None:
        return None
    file = os.path.join(folder, record["file"])
    if not os.path.isfile(file):
        raise FileNotFoundError(f"{config} names the vocabulary {record['file']}, which is not "
                                f"in {folder}")
    return record["type"], file, record.get("lowercase")


def _hf_casing(folder):
    value = _json_field(os.path.join(folder, TOKENIZER_CONFIG), "do_lower_case")
    return value if isinstance(value, bool) else None


def _json_field(path, key):
    """`key` of the JSON object in `path`; None if the file or the key is absent."""
    if not os.path.isfile(path):
        return None
    value = read_json(path)
    return value.get(key) if isinstance(value, dict) else None
