"""MediaPipe's TextClassifier on the mediapipe export against the SavedModel, on real text.

    python bench/phone_agreement.py [--config=albert_base] [--texts=300] [--output=out.json]

Builds two classifiers of `--config` (weights drawn at random, N(0, --weight_std), so
that scores spread: no fine-tuned model ships here): an English SST-2 head on
ALBERT's 30k SentencePiece model, a Chinese TNEWS head on the Chinese WordPiece
vocabulary. Exports each with `albert-tf export`'s path (`run_export`,
`--formats=tflite,mediapipe,mediapipe:float16,mediapipe:dynamic_int8`), then runs
MediaPipe's `TextClassifier` (its own tokenizer, from the model's metadata) on
`--texts` real texts as they come (English: the sentences of GLUE RTE's and MRPC's
dev sets; Chinese: OCNLI's premises, from ../shared) and compares with the
SavedModel's `serving_default` on the same texts. Reports per variant: texts with
the same top label, with every score within 2e-3, the largest score difference;
the file's size; MediaPipe's batch-1 latency (ms, median); and the size and
batch-1 latency of today's tflite export (ids in, LiteRT). Also how many texts
the device tokenizer tokenizes differently from albert_tf's. Not a test.
"""

import argparse
import csv
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

from albert_tf import tasks  # noqa: E402
from albert_tf.backbone import AlbertBackbone  # noqa: E402
from albert_tf.config import AlbertConfig  # noqa: E402
from albert_tf.export import INFO_FILE  # noqa: E402
from albert_tf.export.settings import ExportSettings  # noqa: E402
from albert_tf.tasks.finetuned import run_export  # noqa: E402
from albert_tf.tokenizer.loading import load_tokenizer  # noqa: E402
from albert_tf.training.finetuning import save_finetuned  # noqa: E402
from albert_tf.training.settings import FinetuneSettings  # noqa: E402

SHARED = os.path.join(os.path.dirname(ROOT), "shared", "data")
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
VARIANTS = ("float32", "float16", "dynamic_int8")
TOLERANCE = 2e-3


def english_texts(count):
    texts = []
    for name in ("RTE/dev.tsv", "MRPC/dev.tsv"):
        with open(os.path.join(SHARED, "glue", name), encoding="utf-8-sig") as f:
            rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
        columns = (1, 2) if name.startswith("RTE") else (3, 4)
        texts += [row[c] for row in rows for c in columns]
    return texts[:count]


def chinese_texts(count):
    with open(os.path.join(SHARED, "clue", "ocnli", "train.json"), encoding="utf-8") as f:
        return [json.loads(line)["sentence1"] for line in f][:count]


def model_dir(folder, task_name, vocabulary, config, std, max_seq_length, seed=0):
    """A fine-tuned model folder with random weights (`tests/export_helpers.py`'s way)."""
    tokenizer = load_tokenizer(vocabulary, host=True)
    task = tasks.get(task_name)
    settings = FinetuneSettings(task=task_name, output_dir=folder, max_seq_length=max_seq_length,
                                dropout=0.0, classifier_dropout=0.0)
    backbone = AlbertBackbone(AlbertConfig(**dict(config, vocabulary_size=tokenizer.vocab.size)))
    model = task.build_model(backbone, settings)
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        if "gamma" in variable.path or "scale" in variable.path:
            continue  # LayerNorm scales stay at one
        values = rng.normal(0, std, variable.shape)
        variable.assign(values.astype(variable.dtype))
    path = os.path.join(folder, "model")
    save_finetuned(model, task, settings, path, tokenizer)
    return path


def _median_ms(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def mediapipe_scores(path, texts, labels):
    from mediapipe.tasks.python import core, text

    options = text.TextClassifierOptions(
        base_options=core.base_options.BaseOptions(model_asset_path=path), max_results=-1)
    with text.TextClassifier.create_from_options(options) as classifier:
        rows = []
        for sentence in texts:
            found = {c.category_name: c.score
                     for c in classifier.classify(sentence).classifications[0].categories}
            rows.append([found[label] for label in labels])
        latency = _median_ms(lambda: classifier.classify(texts[0]), 50)
    return np.array(rows), latency


def tflite_latency(path, length):
    from albert_tf.export.formats.tflite.convert import TfliteModel

    model = TfliteModel(path=path)
    inputs = {name: np.ones((1, length), np.int32) for name in model.input_names}
    return _median_ms(lambda: model(**inputs), 50)


def agreement(got, expected):
    differences = np.abs(got - expected).max(axis=1)
    return {"same_top_label": int((got.argmax(1) == expected.argmax(1)).sum()),
            "within_2e-3": int((differences <= TOLERANCE).sum()), "texts": len(got),
            "max_difference": float(differences.max())}


def tokenizer_differences(version, vocabulary, texts):
    """How many texts the device tokenizer splits otherwise than albert_tf's (a
    SentencePiece model only; the runtimes' WordPiece has no Python form here)."""
    from albert_tf.export.formats.phone import metadata

    with open(os.path.join(version, "mediapipe", "model.tflite"), "rb") as f:
        files = metadata.packed_files(f.read())
    if "spiece.model" not in files:
        return None
    import sentencepiece

    host = load_tokenizer(vocabulary, host=True)
    stock = sentencepiece.SentencePieceProcessor(model_proto=files["spiece.model"])
    return sum(stock.encode(t) != host.encode(t) for t in texts)


def run(name, task_name, vocabulary, texts, arguments, config):
    folder = tempfile.mkdtemp(prefix=f"phone_{name}_")
    path = model_dir(folder, task_name, vocabulary, config, arguments.weight_std,
                     arguments.max_seq_length)
    formats = "tflite," + ",".join(f"mediapipe:{v}" for v in VARIANTS)
    version = run_export(ExportSettings(model_dir=path, export_dir=os.path.join(folder, "export"),
                                        precision="fp32", formats=formats))["export_dir"]
    with open(os.path.join(version, INFO_FILE), encoding="utf-8") as f:
        info = json.load(f)
    labels = info["formats"]["mediapipe"]["labels"]
    serving = tf.saved_model.load(version).signatures["serving_default"]
    expected = np.concatenate([serving(text=tf.constant(texts[i:i + 32]))["probabilities"].numpy()
                               for i in range(0, len(texts), 32)])
    result = {"texts": len(texts), "labels": len(labels),
              "score_spread": float(expected.max(1).mean()),
              "tokenizer_differences": tokenizer_differences(version, vocabulary, texts),
              "tflite": {"bytes": os.path.getsize(os.path.join(version, "model.tflite")),
                         "latency_ms": tflite_latency(os.path.join(version, "model.tflite"),
                                                      arguments.max_seq_length)}}
    for variant in VARIANTS:
        spelling = "mediapipe" if variant == "float32" else f"mediapipe:{variant}"
        file = os.path.join(version, info["formats"][spelling]["file"])
        got, latency = mediapipe_scores(file, texts, labels)
        result[variant] = dict(agreement(got, expected), bytes=os.path.getsize(file),
                               latency_ms=latency)
        print(name, variant, result[variant], flush=True)
    return result


def table(results):
    """The results as a Markdown table (SERVING.md's)."""
    lines = ["| texts | file | MB | batch-1 ms | same top label | within 2e-3 | max diff |",
             "|---|---|---|---|---|---|---|"]
    for language, found in results.items():
        today = found["tflite"]
        lines.append(f"| {language} | model.tflite (ids in, LiteRT) | {today['bytes'] / 1e6:.2f} "
                     f"| {today['latency_ms']:.2f} | | | |")
        for variant in VARIANTS:
            row = found[variant]
            lines.append(f"| {language} | mediapipe {variant} (MediaPipe, text in) | "
                         f"{row['bytes'] / 1e6:.2f} | {row['latency_ms']:.2f} | "
                         f"{row['same_top_label']}/{row['texts']} | "
                         f"{row['within_2e-3']}/{row['texts']} | {row['max_difference']:.1e} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="albert_base")
    parser.add_argument("--texts", type=int, default=300)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--weight_std", type=float, default=0.05)
    parser.add_argument("--languages", default="en,zh")
    parser.add_argument("--output", default=None)
    arguments = parser.parse_args()
    with open(os.path.join(ROOT, "albert_tf", "configs", "models",
                           f"{arguments.config}.json")) as f:
        config = json.load(f)
    runs = {"en": ("sst2", os.path.join(FIXTURES, "spm", "albert_30k_clean.model"),
                   english_texts),
            "zh": ("tnews", os.path.join(FIXTURES, "wordpiece", "vocab.txt"), chinese_texts)}
    results = {}
    for language in arguments.languages.split(","):
        task_name, vocabulary, texts = runs[language]
        results[language] = run(language, task_name, vocabulary, texts(arguments.texts),
                                arguments, config)
    print(json.dumps(results, indent=1))
    print(table(results))
    if arguments.output:
        with open(arguments.output, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
