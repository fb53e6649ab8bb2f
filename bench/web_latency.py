"""The web export in headless Chromium: bundle size, page-ready time, latency, accuracy.

    python bench/web_latency.py [--model_dir=runs/mrpc] \
        [--data_dir=../shared/data/glue/MRPC] [--requests=10] [--rounds=2] [--output=FILE]

1. Bundle: `export --web` of an albert-base-sized MRPC classifier (random
   weights: the sizes do not depend on them) at `--web_variant=dynamic_int8`,
   max_seq_length 128, with the one WebAssembly build Chromium loads (what a
   page downloads; `--web_wasm=auto` ships the other build too, for browsers
   without relaxed SIMD); its files by kind (model, vocabulary, JS, WASM) beside
   transformers.js's albert-base-v2 int8 set (`Xenova/albert-base-v2`'s
   published sizes: model 11.8 MB, tokenizer.json 2.3 MB, onnxruntime-web's
   WASM 12.8-25.9 MB; nothing is downloaded). MB are 10^6 bytes.
2. Latency, interleaved in `--rounds` rounds on the same machine: the page
   (both LiteRT.js WebAssembly builds) in headless Chromium, typed one MRPC dev
   pair at a time (page-ready time: navigation to a loaded model; a request:
   the click to the answer shown, tokenization included), and the same
   model.tflite through the Python TFLite interpreter in its own process
   (ready: tokenizer and interpreter loaded; a request: host tokenization,
   packing and one batch-1 call).
3. Accuracy (with `--model_dir`, a fine-tuned MRPC `model/` folder): the
   exported SavedModel's `serving_default` and the web bundle's TFLite model
   (the same packing, tested equal to the page's) on the MRPC dev set.
Not a test.
"""

import argparse
import functools
import gzip
import http.server
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from common import emit, machine, run_json, table  # noqa: E402

MB = 1e6
SPM = os.path.join(ROOT, "tests", "fixtures", "spm", "albert_30k_clean.model")
DRIVER = os.path.join(ROOT, "tests", "web", "drive_page.mjs")
# Xenova/albert-base-v2 (transformers.js): onnx/model_quantized.onnx, tokenizer.json,
# and onnxruntime-web's WebAssembly files (the smallest and the largest build).
TRANSFORMERS_JS = {"model": 11.8 * MB, "tokenizer": 2.3 * MB, "wasm_low": 12.8 * MB,
                   "wasm_high": 25.9 * MB}


def _arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", default=None,
                        help="a fine-tuned MRPC model/ folder, for the accuracy check")
    parser.add_argument("--data_dir", default=os.path.join(ROOT, "..", "shared", "data", "glue",
                                                           "MRPC"))
    parser.add_argument("--requests", type=int, default=10, help="timed requests per round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--output", default=None, help="also write the results as JSON here")
    parser.add_argument("--tflite_worker", nargs=2, metavar=("MODEL", "PAIRS"),
                        help=argparse.SUPPRESS)  # internal: the Python interpreter's side
    return parser.parse_args()


def _dev_pairs(data_dir):
    from albert_tf.tasks import get

    return get("mrpc").read_examples(data_dir, "dev")


# -- 1. The bundle -----------------------------------------------------------------

def _base_bundle(folder, max_seq_length):
    """`web.write` of a random albert-base MRPC classifier into `folder`."""
    from albert_tf.backbone import AlbertBackbone
    from albert_tf.tokenizer.loading import load_tokenizer
    from albert_tf.config import AlbertConfig
    from albert_tf.export.formats.web import bundle as web
    from albert_tf.export.classification import ClassifierServing
    from albert_tf.models import AlbertClassifier

    model = AlbertClassifier(AlbertBackbone(AlbertConfig.preset("albert_base")), 2, dropout=0.0)
    module = ClassifierServing(model, load_tokenizer(SPM), max_seq_length, ["0", "1"], pair=True)
    # The build Chromium loads from an "auto" bundle, alone: what its page downloads.
    return web.write(module, load_tokenizer(SPM, host=True), folder, "dynamic_int8",
                     wasm_build="relaxed_simd")


def _kind(name):
    if name.endswith(".tflite"):
        return "model"
    if name.endswith(".wasm"):
        return "wasm"
    if name in ("vocab.model", "vocab.txt", "tokenizer.json"):
        return "vocabulary"
    return "js"  # JS modules, the page, head.json


def size_table(folder):
    """Bytes per kind (and gzip-compressed), the total and the ratios to transformers.js."""
    sizes, packed = {}, {}
    for path in sorted(pathlib.Path(folder).rglob("*")):
        if path.is_file():
            kind = _kind(path.name)
            data = path.read_bytes()
            sizes[kind] = sizes.get(kind, 0) + len(data)
            packed[kind] = packed.get(kind, 0) + len(gzip.compress(data, 6))
    total, total_gz = sum(sizes.values()), sum(packed.values())
    peer = TRANSFORMERS_JS
    low = peer["model"] + peer["tokenizer"] + peer["wasm_low"]
    high = peer["model"] + peer["tokenizer"] + peer["wasm_high"]
    return {"bytes": sizes, "gzip_bytes": packed, "total": total, "total_gzip": total_gz,
            "transformers_js": {"low": low, "high": high},
            "ratio_to_low": total / low, "ratio_to_high": total / high,
            # The floor of any int8 model: one byte per weight of the model itself.
            "model_share_of_target": sizes.get("model", 0) / (0.5 * low)}


# -- 2. Latency ---------------------------------------------------------------------

class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no line per file served
        pass


def _serve(folder):
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _with_build(folder, build, into):
    """A copy of the bundle `folder` that loads LiteRT.js's `build` instead."""
    from albert_tf.export.formats.web import bundle as web

    shutil.copytree(folder, into)
    for old in (into / "runtime" / "wasm").iterdir():
        old.unlink()
    name = web.WASM_BUILDS[build]
    for ext in ("js", "wasm"):
        shutil.copyfile(web.node_modules() / f"@litertjs/core/wasm/{name}.{ext}",
                        into / "runtime" / "wasm" / f"{name}.{ext}")
    head = json.loads((into / "head.json").read_text(encoding="utf-8"))
    head.update(runtime=f"runtime/wasm/{name}.js", wasm_build=build)
    (into / "head.json").write_text(json.dumps(head), encoding="utf-8")
    return into


def browser_round(folder, cases, work):
    """(page-ready seconds, [request seconds]) of one headless Chromium session."""
    server = _serve(folder)
    out = work / "answers.json"
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/index.html"
        result = subprocess.run(["node", DRIVER, url, str(cases), str(out)], capture_output=True,
                                text=True, timeout=1800)
    finally:
        server.shutdown()
    if result.returncode != 0:
        raise RuntimeError(f"the page failed: {result.stderr[-2000:]}")
    answers = json.loads(out.read_text(encoding="utf-8"))
    return answers["ready_ms"] / 1e3, [a["ms"] / 1e3 for a in answers["answers"]]


def tflite_worker(model_path, pairs_path):
    """The Python side (own process): ready time and per-request seconds."""
    import numpy as np

    from albert_tf.export.formats.tflite.convert import TfliteModel
    from albert_tf.tokenizer.sentencepiece.host import HostTokenizer
    from albert_tf.tasks.base import Example
    from albert_tf.tasks.sentence_prediction.task import encode_pairs

    pairs = [json.loads(line) for line in open(pairs_path, encoding="utf-8") if line.strip()]
    start = time.perf_counter()
    tokenizer = HostTokenizer(SPM)
    model = TfliteModel(model_path)
    ready = time.perf_counter() - start
    times = []
    for i, pair in enumerate([pairs[0]] + pairs):  # the first call warms up, untimed
        begin = time.perf_counter()
        arrays, lengths = encode_pairs([Example("0", pair["text_a"], pair["text_b"])], tokenizer,
                                       model.max_seq_length)
        mask = (np.arange(model.max_seq_length)[None] < lengths[:, None]).astype(np.int32)
        model(token_ids=arrays["token_ids"], segment_ids=arrays["segment_ids"],
              padding_mask=mask)
        if i:
            times.append(time.perf_counter() - begin)
    emit({"ready": ready, "times": times})


def latency(folder, pairs, rounds, work):
    """Interleaved rounds: the page on each WebAssembly build, then Python."""
    cases = work / "cases.jsonl"
    cases.write_text("".join(json.dumps({"text_a": e.text_a, "text_b": e.text_b}) + "\n"
                             for e in pairs), encoding="utf-8")
    builds = {"relaxed_simd": folder, "compat": _with_build(folder, "compat", work / "compat")}
    found = {name: {"ready": [], "times": []} for name in
             [f"chromium_{b}" for b in builds] + ["python_tflite"]}
    for _ in range(rounds):
        for build, bundle in builds.items():
            ready, times = browser_round(bundle, cases, work)
            found[f"chromium_{build}"]["ready"].append(ready)
            found[f"chromium_{build}"]["times"].extend(times)
        got = run_json("web_latency.py", "--tflite_worker", str(folder / "model.tflite"),
                       str(cases))
        found["python_tflite"]["ready"].append(got["ready"])
        found["python_tflite"]["times"].extend(got["times"])
    return {name: {"ready_s": statistics.median(v["ready"]),
                   "request_median_s": statistics.median(v["times"]),
                   "request_p90_s": sorted(v["times"])[int(0.9 * (len(v["times"]) - 1))],
                   "requests": len(v["times"])} for name, v in found.items()}


# -- 3. Accuracy --------------------------------------------------------------------

def accuracy(model_dir, examples, work):
    """MRPC dev accuracy of the SavedModel and of the web bundle's TFLite model."""
    import numpy as np
    import tensorflow as tf

    from albert_tf.tokenizer.loading import load_tokenizer
    from albert_tf.export import exporter
    from albert_tf.export.formats.tflite.convert import TfliteModel
    from albert_tf.tasks.sentence_prediction.task import encode_pairs
    from albert_tf.tasks.finetuned import build_serving_module

    model_dir = exporter.resolve_model_dir(model_dir)
    module, info = build_serving_module(model_dir)
    host = load_tokenizer(model_dir, host=True)
    # (the web format's default variant: dynamic int8)
    target = exporter.write_export(module, info, str(work / "export" / "1"), formats=("web",),
                                   model_dir=model_dir)
    labels = np.array([int(e.label) for e in examples])
    serve = tf.saved_model.load(target).signatures["serving_default"]
    saved = np.concatenate([serve(text_a=tf.constant([e.text_a for e in examples[i:i + 32]]),
                                  text_b=tf.constant([e.text_b for e in examples[i:i + 32]]))
                            ["label_id"].numpy() for i in range(0, len(examples), 32)])
    lite = TfliteModel(os.path.join(target, "web", "model.tflite"))
    arrays, lengths = encode_pairs(examples, host, lite.max_seq_length)
    mask = (np.arange(lite.max_seq_length)[None] < lengths[:, None]).astype(np.int32)
    web_ids = np.array([int(np.argmax(lite(token_ids=arrays["token_ids"][i:i + 1],
                                           segment_ids=arrays["segment_ids"][i:i + 1],
                                           padding_mask=mask[i:i + 1])["logits"][0]))
                        for i in range(len(examples))])
    saved_accuracy = float(np.mean(saved == labels))
    web_accuracy = float(np.mean(web_ids == labels))
    return {"model_dir": model_dir, "examples": len(examples),
            "saved_model_accuracy": saved_accuracy, "web_tflite_accuracy": web_accuracy,
            "difference_points": 100 * (web_accuracy - saved_accuracy),
            "agreement": float(np.mean(saved == web_ids)),
            "majority_accuracy": float(max(np.mean(labels), 1 - np.mean(labels)))}


def main():
    args = _arguments()
    if args.tflite_worker:
        tflite_worker(*args.tflite_worker)
        return
    examples = _dev_pairs(args.data_dir)
    results = {"machine": machine() + " (shared with other work)"}
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        bundle = work / "web"
        results["bundle"] = _base_bundle(bundle, args.max_seq_length)
        results["sizes"] = sizes = size_table(bundle)
        results["latency"] = latency(bundle, examples[:args.requests], args.rounds, work)
        if args.model_dir:
            results["accuracy"] = accuracy(args.model_dir, examples, work)
    rows = [{"part": kind, "bytes": f"{n / MB:.2f} MB",
             "gzip": f"{sizes['gzip_bytes'][kind] / MB:.2f} MB"}
            for kind, n in sorted(sizes["bytes"].items())]
    rows.append({"part": "total", "bytes": f"{sizes['total'] / MB:.2f} MB",
                 "gzip": f"{sizes['total_gzip'] / MB:.2f} MB"})
    peer = sizes["transformers_js"]
    rows.append({"part": "transformers.js albert-base-v2 int8",
                 "bytes": f"{peer['low'] / MB:.1f}-{peer['high'] / MB:.1f} MB"})
    print(table(rows, ["part", "bytes", "gzip"]))
    print(f"ratio to transformers.js: {sizes['ratio_to_low']:.2f}x (its smallest WASM) - "
          f"{sizes['ratio_to_high']:.2f}x (its largest); target 0.5x; the int8 model alone is "
          f"{sizes['model_share_of_target']:.2f}x of the target's bytes (its smallest WASM)")
    print(table([{"runtime": k, **{c: f"{v[c]:.3f}" if c != "requests" else v[c] for c in v}}
                 for k, v in results["latency"].items()],
                ["runtime", "ready_s", "request_median_s", "request_p90_s", "requests"]))
    if "accuracy" in results:
        a = results["accuracy"]
        print(f"MRPC dev ({a['examples']}): SavedModel {a['saved_model_accuracy']:.4f}, web "
              f"TFLite {a['web_tflite_accuracy']:.4f} ({a['difference_points']:+.2f} points; "
              f"agreement {a['agreement']:.4f}; majority {a['majority_accuracy']:.4f})")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)
    emit(results)


if __name__ == "__main__":
    main()
