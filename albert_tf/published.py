"""The names of published checkpoints and the cache they are fetched into, known
without TensorFlow (a command checks its paths before importing it;
`albert_tf.checkpoints.download` fetches them)."""

import os

# Bare names: `source:name` of each released model.
PUBLISHED = {
    **{f"albert_{size}_{version}": f"hf:albert/albert-{size}-{version}"
       for size in ("base", "large", "xlarge", "xxlarge") for version in ("v1", "v2")},
    # Google's Chinese releases (model.ckpt-best, vocab_chinese.txt).
    **{f"albert_{size}_zh": f"google:albert_{size}_zh"
       for size in ("base", "large", "xlarge", "xxlarge")},
    # brightmart/albert_zh's own zips (its albert_large_zh is reached as
    # brightmart:albert_large_zh: the bare name is Google's).
    "albert_tiny_zh": "brightmart:albert_tiny",
    "albert_tiny_google_zh": "brightmart:albert_tiny_zh_google",
    "albert_small_google_zh": "brightmart:albert_small_zh_google",
    # Hugging Face conversions of brightmart/albert_zh (pytorch_model.bin, vocab.txt);
    # clue/albert_chinese_{tiny,small} hold the same models under hf:clue/...
    **{f"albert_chinese_{size}": f"hf:voidful/albert_chinese_{size}"
       for size in ("tiny", "small", "base", "large", "xlarge", "xxlarge")},
    # Pretrained by UER on CLUECorpusSmall, and by CKIP Lab (traditional Chinese).
    **{f"albert_{size}_chinese_cluecorpussmall":
       f"hf:uer/albert-{size}-chinese-cluecorpussmall" for size in ("base", "large")},
    **{f"ckiplab_albert_{size}_chinese": f"hf:ckiplab/albert-{size}-chinese"
       for size in ("tiny", "base")},
}


def cache_dir():
    """`$ALBERT_TF_CACHE`, default ~/.cache/albert_tf: downloaded checkpoints and
    the execution probe's measurements."""
    return os.environ.get("ALBERT_TF_CACHE", os.path.join(os.path.expanduser("~"), ".cache",
                                                          "albert_tf"))


SOURCES = ("hf", "google", "keras_hub", "brightmart")


def is_published_name(path):
    """Whether `path` names a published checkpoint (a bare name or `source:name`)."""
    return path in PUBLISHED or path.partition(":")[0] in SOURCES
