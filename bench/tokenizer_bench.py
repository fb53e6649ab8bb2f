"""Throughput of ALBERT tokenization: ours (in-graph, host) vs sentencepiece and keras-hub.

    python bench/tokenizer_bench.py [--corpus=../shared/data/corpus/gutenberg]

Not a test. Prints examples/second for tokenizing and for featurizing
(tokenize + pack `[CLS] text [SEP]` to --seq_length), each the best of
--repeats timed trials after one warm-up run, with the ratio to plain
`sentencepiece` Python `encode` on the raw text. Then counts how many of the
reference paragraphs each path tokenizes differently from ALBERT's reference
ids. The examples are the reference paragraphs, or with --corpus the
paragraphs (blank-line separated) of the `.txt` files in that folder.
"""

import glob
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import keras_hub  # noqa: E402
import sentencepiece as spm  # noqa: E402
import tensorflow as tf  # noqa: E402
from absl import app, flags  # noqa: E402

from albert_tf.steps import SegmentPacker  # noqa: E402
from albert_tf.tokenizer import AlbertTokenizer, HostTokenizer, preprocess_text  # noqa: E402

# The host packing the library no longer has, kept as a reference in tests/.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests"))
from packing_reference import pack_host  # noqa: E402

_FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "tests", "fixtures", "spm")
FLAGS = flags.FLAGS
flags.DEFINE_string("model", os.path.join(_FIXTURES, "albert_30k_clean.model"),
                    "SentencePiece model.")
flags.DEFINE_string("reference", os.path.join(_FIXTURES, "tokenization_reference.jsonl"),
                    "JSON lines with `text` and reference `ids`.")
flags.DEFINE_string("corpus", None, "Optional folder of .txt files to time on instead.")
flags.DEFINE_integer("max_examples", 2000, "At most this many corpus paragraphs.")
flags.DEFINE_integer("batch_size", 64, "Batch size of the in-graph paths.")
flags.DEFINE_integer("seq_length", 128, "Featurization length.")
flags.DEFINE_integer("repeats", 3, "Timed trials per measurement (the best is reported).")
flags.DEFINE_float("min_seconds", 1.0, "Minimum duration of one timed trial.")


def read_reference(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def read_corpus(folder, limit):
    """Paragraphs (blank-line separated, lines joined) of every .txt file in `folder`."""
    paragraphs = []
    for path in sorted(glob.glob(os.path.join(folder, "*.txt"))):
        with open(path, encoding="utf-8", errors="replace") as f:
            blocks = f.read().replace("\r\n", "\n").split("\n\n")
        paragraphs += [" ".join(b.split("\n")).strip() for b in blocks if b.strip()]
    if not paragraphs:
        raise ValueError(f"--corpus={folder}: no paragraphs in its .txt files")
    return paragraphs[:limit]


def best_rate(fn, count, repeats, min_seconds):
    """Examples per second of `fn()` processing `count` examples.

    One warm-up call (traces tf.functions, fills caches), then `repeats`
    trials, each calling `fn` until `min_seconds` have passed; the best
    trial counts (the machine may be shared).
    """
    fn()
    best = float("inf")
    for _ in range(repeats):
        runs, start = 0, time.perf_counter()
        while True:
            fn()
            runs += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds:
                break
        best = min(best, elapsed / runs)
    return count / best


def in_graph(fn, texts, batch_size):
    """Runs `fn` (a tf.function) over constant batches; returns a no-argument callable."""
    batches = [tf.constant(texts[i:i + batch_size]) for i in range(0, len(texts), batch_size)]

    def run():
        for batch in batches:
            tf.nest.map_structure(lambda t: t.numpy() if hasattr(t, "numpy") else t, fn(batch))
    return run


def build_paths(texts, m):
    """`(tokenize, featurize)`: lists of (label, callable) over `texts`."""
    sp = spm.SentencePieceProcessor(model_file=FLAGS.model)
    host = HostTokenizer(FLAGS.model)
    ours = AlbertTokenizer(FLAGS.model)
    hub = keras_hub.tokenizers.AlbertTokenizer(proto=FLAGS.model)
    packer = SegmentPacker(m, cls_id=ours.cls_id, sep_id=ours.sep_id, pad_id=ours.pad_id)
    hub_packer = keras_hub.layers.MultiSegmentPacker(
        sequence_length=m, start_value=ours.cls_id, end_value=ours.sep_id,
        pad_value=ours.pad_id)
    ids = (host.cls_id, host.sep_id, host.pad_id)
    b = FLAGS.batch_size
    tokenize = [
        ("sentencepiece encode, raw text", lambda: [sp.encode(t) for t in texts]),
        ("sentencepiece encode + preprocess_text",
         lambda: [sp.encode(preprocess_text(t, True)) for t in texts]),
        ("HostTokenizer.encode", lambda: [host.encode(t) for t in texts]),
        ("HostTokenizer.encode_batch (threads)", lambda: host.encode_batch(texts)),
        ("HostTokenizer.encode_with_offsets",
         lambda: [host.encode_with_offsets(t) for t in texts]),
        (f"AlbertTokenizer, tf.function, batch {b}", in_graph(tf.function(ours), texts, b)),
        (f"AlbertTokenizer.tokenize_with_offsets, tf.function, batch {b}",
         in_graph(tf.function(ours.tokenize_with_offsets), texts, b)),
        (f"keras-hub AlbertTokenizer, tf.function, batch {b}",
         in_graph(tf.function(hub), texts, b)),
        ("keras-hub AlbertTokenizer, eager, one text a call", lambda: [hub(t) for t in texts]),
    ]
    featurize = [
        (f"sentencepiece + preprocess_text + pack_host({m})",
         lambda: [pack_host(sp.encode(preprocess_text(t, True)), None, m, *ids) for t in texts]),
        (f"HostTokenizer.encode + pack_host({m})",
         lambda: [pack_host(host.encode(t), None, m, *ids) for t in texts]),
        (f"AlbertTokenizer + SegmentPacker({m}), tf.function, batch {b}",
         in_graph(tf.function(lambda x: packer(ours(x))), texts, b)),
        (f"keras-hub tokenizer + MultiSegmentPacker({m}), tf.function, batch {b}",
         in_graph(tf.function(lambda x: hub_packer(hub(x))[0]), texts, b)),
    ]
    return tokenize, featurize, (sp, host, ours, hub)


def print_table(title, rows, baseline):
    print(f"\n{title}")
    width = max(len(label) for label, _ in rows) + 2
    print(f"{'path':<{width}}{'examples/s':>12}{'vs spm':>9}")
    for label, rate in rows:
        print(f"{label:<{width}}{rate:>12,.0f}{rate / baseline:>8.2f}x")


def _lists(ids):
    """Python lists from a RaggedTensor or keras-hub's eager output (lists already)."""
    return ids.to_list() if hasattr(ids, "to_list") else [list(map(int, row)) for row in ids]


def count_mismatches(reference, paths):
    """How many reference paragraphs each path tokenizes differently."""
    sp, host, ours, hub = paths
    texts = [r["text"] for r in reference]
    expected = [r["ids"] for r in reference]
    results = {
        "AlbertTokenizer (in-graph)": ours(tf.constant(texts)).to_list(),
        "AlbertTokenizer.tokenize_with_offsets": ours.tokenize_with_offsets(texts)[0].to_list(),
        "HostTokenizer.encode": [host.encode(t) for t in texts],
        "HostTokenizer.encode_with_offsets": [host.encode_with_offsets(t)[0] for t in texts],
        "sentencepiece encode, raw text": [sp.encode(t) for t in texts],
        "sentencepiece encode + preprocess_text": [sp.encode(preprocess_text(t, True))
                                                   for t in texts],
        "keras-hub AlbertTokenizer": _lists(hub(tf.constant(texts))),
        "keras-hub AlbertTokenizer on preprocess_text": _lists(
            hub(tf.constant([preprocess_text(t, True) for t in texts]))),
    }
    print(f"\nParagraphs tokenized differently from the reference ids (of {len(texts)}):")
    width = max(map(len, results)) + 2
    for label, got in results.items():
        wrong = sum(g != e for g, e in zip(got, expected))
        print(f"{label:<{width}}{wrong:>5}")


def main(argv):
    del argv
    reference = read_reference(FLAGS.reference)
    if FLAGS.corpus:
        texts, source = read_corpus(FLAGS.corpus, FLAGS.max_examples), FLAGS.corpus
    else:
        texts, source = [r["text"] for r in reference], FLAGS.reference
    chars = sum(map(len, texts))
    print(f"{len(texts)} examples ({chars / len(texts):.0f} characters on average) from {source}")
    print(f"TensorFlow {tf.__version__}, keras-hub {keras_hub.__version__}, "
          f"sentencepiece {spm.__version__}; CPU count {os.cpu_count()}")
    tokenize, featurize, paths = build_paths(texts, FLAGS.seq_length)
    def measure(paths):
        return [(label, best_rate(fn, len(texts), FLAGS.repeats, FLAGS.min_seconds))
                for label, fn in paths]

    rates = measure(tokenize)
    baseline = rates[0][1]
    print_table("Tokenize", rates, baseline)
    rates = measure(featurize)
    print_table(f"Featurize (tokenize + pack to {FLAGS.seq_length})", rates, baseline)
    count_mismatches(reference, paths)


if __name__ == "__main__":
    app.run(main)
