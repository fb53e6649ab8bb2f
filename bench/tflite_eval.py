"""What TFLite conversion and int8 quantization cost a fine-tuned GLUE model.

    python bench/tflite_eval.py --model_dir=runs/rte --data_dir=glue/RTE \
        [--batch_size=32] [--max_examples=N] [--output=results.json]

`--model_dir`: a fine-tuned `model/` folder of a GLUE task (or the run's output
folder). Converts the model as `python -m albert_tf.export --tflite` does,
float and with dynamic-range int8 quantization (`--quantize`), featurizes
each dev split of the task on the host at the run's `max_seq_length`, and
reports for the Keras model (the reference), the float TFLite and the int8
TFLite model: the task's dev metrics, examples/second (one process, CPU),
and the two flatbuffers' sizes and their ratio. Not a test.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from albert_tf.export import exporter  # noqa: E402
from albert_tf.export.formats.tflite import convert as tflite  # noqa: E402
from albert_tf.tasks.sentence_prediction import glue  # noqa: E402
from albert_tf.tasks.sentence_prediction.task import GlueTask  # noqa: E402
from albert_tf.tasks.finetuned import build_serving_module, load_finetuned  # noqa: E402


def _arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", required=True, help="fine-tuned model/ folder")
    parser.add_argument("--data_dir", required=True, help="the task's GLUE folder")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--max_examples", type=int, default=None,
                        help="at most this many examples per dev split")
    parser.add_argument("--output", default=None, help="also write the results as JSON here")
    return parser.parse_args()


def _inputs(task, settings, tokenizer, examples):
    """(model inputs, label array) of examples, padded to max_seq_length."""
    features = task.featurize(examples, tokenizer, settings, "dev")
    arrays = features.arrays
    length = features.max_seq_length
    inputs = {"token_ids": arrays["token_ids"], "segment_ids": arrays["segment_ids"],
              "padding_mask": (np.arange(length)[None] < features.lengths[:, None])
              .astype(np.int32)}
    return inputs, arrays["label"]


def _evaluate(run, task, inputs, labels, batch_size):
    """(metrics, examples per second) of `run` (inputs dict -> logits), timed after
    one warm-up batch."""
    run({k: v[:batch_size] for k, v in inputs.items()})
    start, logits = time.perf_counter(), []
    for begin in range(0, len(labels), batch_size):
        logits.append(run({k: v[begin:begin + batch_size] for k, v in inputs.items()}))
    seconds = time.perf_counter() - start
    predictions = task.predictions({"logits": np.concatenate(logits)})
    return glue.compute_metrics(task.spec, labels, predictions), len(labels) / seconds


def main():
    args = _arguments()
    model_dir = exporter.resolve_model_dir(args.model_dir)
    task, settings, model, tokenizer = load_finetuned(model_dir)
    if not isinstance(task, GlueTask):
        sys.exit(f"error: {model_dir} is fine-tuned on {task.name!r}, not a GLUE task")
    module, _ = build_serving_module(model_dir)
    flatbuffers = {name: tflite.convert(module, quantize=name == "int8")
                   for name in ("float", "int8")}
    runners = {"keras": lambda x: np.asarray(model(x, training=False)["logits"])}
    for name, content in flatbuffers.items():
        runners[f"tflite_{name}"] = (
            lambda x, m=tflite.TfliteModel(content=content): m(**x)["logits"])
    results = {"task": task.name, "model_dir": model_dir,
               "max_seq_length": settings.max_seq_length,
               "bytes": {name: len(content) for name, content in flatbuffers.items()},
               "size_ratio": len(flatbuffers["int8"]) / len(flatbuffers["float"]), "splits": {}}
    for split in task.eval_splits:
        examples = task.read_examples(args.data_dir, split)[:args.max_examples]
        inputs, labels = _inputs(task, settings, tokenizer, examples)
        results["splits"][split] = {"examples": len(labels)}
        for name, run in runners.items():
            metrics, speed = _evaluate(run, task, inputs, labels, args.batch_size)
            results["splits"][split][name] = {**metrics, "examples_per_second": speed}
            shown = ", ".join(f"{k}={v:.4f}" for k, v in metrics.items())
            print(f"{split:>15} {name:>12}: {shown}  ({speed:.1f} examples/s)")
    print(f"size: float {results['bytes']['float']:,} B, int8 {results['bytes']['int8']:,} B, "
          f"ratio {results['size_ratio']:.3f}")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
