"""Raw-text serving: albert_tf's exported SavedModel vs keras-hub's export + its tokenizer.

    python bench/serving_latency.py [--data_dir=../shared/data/glue/MRPC]

Each serves albert-base (random weights) as an MRPC sentence-pair classifier,
each in its own process:
  albert_tf:  the SavedModel's `serving_default` takes the raw strings
              (tokenization in the graph);
  albert_tf_tflite_int8: the export's dynamic-range int8 TFLite file, fed by
              albert_tf's host tokenizer and packer (padding to 128, the file's
              fixed length), through the LiteRT interpreter;
  keras_hub:  keras-hub's `AlbertTextClassifierPreprocessor` (its tokenizer and
              packer, on the host, padding to 128) feeds its exported SavedModel.
Reports the median latency of one request of one pair, and pairs/s for
requests of 32 pairs, on MRPC dev sentences (or generated text without data).
"""

import argparse
import os
import statistics
import tempfile
import time

from common import ROOT, emit, keras_hub_albert_base_classifier, run_json, table

SPM = os.path.join(ROOT, "tests", "fixtures", "spm", "albert_30k_clean.model")


def _pairs(data_dir, count=256):
    if data_dir:
        from albert_tf import tasks

        examples = tasks.get("mrpc").read_examples(data_dir, "dev")
        return [e.text_a for e in examples][:count], [e.text_b for e in examples][:count]
    words = "the cat sat on a mat while seven dogs ran quickly around old houses".split()
    a = [" ".join(words[i % 5:i % 5 + 8]) for i in range(count)]
    return a, [s[::-1] for s in a]


def _measure(serve, text_a, text_b, requests=40):
    """(median seconds for one pair, pairs/s in requests of 32)."""
    singles = []
    for i in range(requests):
        start = time.perf_counter()
        serve(text_a[i:i + 1], text_b[i:i + 1])
        singles.append(time.perf_counter() - start)
    start = time.perf_counter()
    batches = 0
    for i in range(0, len(text_a) - 31, 32):
        serve(text_a[i:i + 32], text_b[i:i + 32])
        batches += 1
    return statistics.median(singles[5:]), 32 * batches / (time.perf_counter() - start)


def albert_tf_export(workdir):
    from albert_tf import tasks
    from albert_tf.backbone import AlbertBackbone
    from albert_tf.config import AlbertConfig
    from albert_tf.tokenizer.loading import load_tokenizer
    from albert_tf.training.finetuning import save_finetuned
    from albert_tf.training.settings import FinetuneSettings

    task = tasks.get("mrpc")
    settings = FinetuneSettings(task="mrpc", output_dir=workdir, max_seq_length=128)
    model = task.build_model(AlbertBackbone(AlbertConfig.preset("albert_base")), settings)
    from albert_tf.tasks.finetuned import export_model

    model_dir = save_finetuned(model, task, settings, os.path.join(workdir, "model"),
                               load_tokenizer(SPM, host=True))
    return export_model(model_dir, os.path.join(workdir, "export"), quantize=True)


def keras_hub_export(workdir):
    model = keras_hub_albert_base_classifier()
    path = os.path.join(workdir, "keras_hub")
    model.export(path, format="tf_saved_model")
    return path


def serve_albert_tf(path, text_a, text_b):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 (registers the SentencePiece ops)

    signature = tf.saved_model.load(path).signatures["serving_default"]
    return lambda a, b: signature(text_a=tf.constant(a), text_b=tf.constant(b))["label"].numpy()


def serve_albert_tf_tflite(path, text_a, text_b):
    import numpy as np

    from albert_tf.tokenizer.loading import load_tokenizer
    from albert_tf.export.formats.tflite.convert import TfliteModel
    from albert_tf.tasks.base import Example
    from albert_tf.tasks.sentence_prediction.task import encode_pairs

    model = TfliteModel(path=os.path.join(path, "model.tflite"))
    tokenizer = load_tokenizer(SPM, host=True)

    def serve(a, b):
        examples = [Example(str(i), x, y) for i, (x, y) in enumerate(zip(a, b))]
        arrays, lengths = encode_pairs(examples, tokenizer, model.max_seq_length)
        arrays["padding_mask"] = (np.arange(model.max_seq_length)[None] < lengths[:, None])
        return model(**{k: arrays[k] for k in model.input_names})

    return serve


def serve_keras_hub(path, text_a, text_b):
    import keras_hub as kh
    import tensorflow as tf

    tokenizer = kh.models.AlbertTokenizer(proto=SPM)
    preprocessor = kh.models.AlbertTextClassifierPreprocessor(tokenizer, sequence_length=128)
    served = tf.saved_model.load(path)

    def serve(a, b):
        x = preprocessor((tf.constant(a), tf.constant(b)))
        x = x[0] if isinstance(x, tuple) else x  # (x,) when there are no labels
        # The exported signature takes int32 masks; the preprocessor gives bool.
        return served.serve({k: tf.cast(v, tf.int32) for k, v in x.items()}).numpy()

    return serve


SERVERS = {"albert_tf": serve_albert_tf, "albert_tf_tflite_int8": serve_albert_tf_tflite,
           "keras_hub": serve_keras_hub}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data_dir")
    parser.add_argument("--impl", choices=list(SERVERS))
    parser.add_argument("--path")
    args = parser.parse_args()
    if args.impl:  # the child process: serve and measure
        text_a, text_b = _pairs(args.data_dir)
        serve = SERVERS[args.impl](args.path, text_a, text_b)
        latency, throughput = _measure(serve, text_a, text_b)
        emit({"impl": args.impl, "latency_ms": round(latency * 1e3, 1),
              "pairs_per_second": round(throughput, 1)})
        return
    with tempfile.TemporaryDirectory() as workdir:
        ours = albert_tf_export(workdir)
        paths = {"albert_tf": ours, "albert_tf_tflite_int8": ours,
                 "keras_hub": keras_hub_export(workdir)}
        data = [f"--data_dir={args.data_dir}"] if args.data_dir else []
        rows = [run_json("serving_latency.py", f"--impl={impl}", f"--path={path}", *data)
                for impl, path in paths.items()]
    peer = rows[-1]
    for row in rows:
        row["latency_vs_keras_hub"] = round(row["latency_ms"] / peer["latency_ms"], 2)
        row["throughput_vs_keras_hub"] = round(row["pairs_per_second"] / peer["pairs_per_second"],
                                               2)
    print(table(rows, list(rows[0])))
    ours = rows[0]
    emit({"serving": rows, "latency_ratio_peer_over_ours": round(
        peer["latency_ms"] / ours["latency_ms"], 2), "throughput_ratio_ours_over_peer": round(
        ours["pairs_per_second"] / peer["pairs_per_second"], 2)})


if __name__ == "__main__":
    main()
