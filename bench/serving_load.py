"""`albert-tf serve` under load: server-side batching against direct calls, and a mixed
load of real and hostile requests.

    python bench/serving_load.py [--export_dir=exports/mrpc] [--data_dir=../shared/data/glue/MRPC]
                                 [--seconds=20] [--mixed_seconds=20] [--clients=16]

1. direct: the export's `serving_default` called in this process on batches of 32
   MRPC dev pairs (pairs/s), measured before and after the server load;
2. server: `albert-tf serve` on 127.0.0.1, `--clients` threads each sending one
   pair a request, one request at a time (keep-alive): pairs/s, p50 and p99;
3. mixed: the same clients for `--mixed_seconds` sending real pairs mixed with
   hostile texts, malformed JSON, wrong inputs, oversized bodies and batches,
   ids out of range: the answers counted by status (5xx other than the
   documented 503 and 504 must be 0);
4. SIGTERM to the server: its exit status and time to exit.

Targets: server pairs/s >= 0.8 x direct; p99 <= 3 x p50; no undocumented 5xx.
Without --export_dir, an MRPC classifier of `--preset`'s size (albert_base;
random weights, max_seq_length 128) is exported into a temporary folder.
"""

import argparse
import http.client
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time

from common import ROOT, emit, machine, table

sys.path.insert(0, ROOT)
SPM = os.path.join(ROOT, "tests", "fixtures", "spm", "albert_30k_clean.model")
DEFAULT_DATA = os.path.join(ROOT, "..", "shared", "data", "glue", "MRPC")


def make_export(workdir, preset):
    import tasks
    from albert_tf.backbone import AlbertBackbone
    from albert_tf.tokenizer.loading import load_tokenizer
    from albert_tf.config import AlbertConfig
    from albert_tf.training.finetuning import save_finetuned
    from albert_tf.training.settings import FinetuneSettings
    from tasks.finetuned import export_model

    task = tasks.get("mrpc")
    settings = FinetuneSettings(task="mrpc", output_dir=workdir, max_seq_length=128)
    model = task.build_model(AlbertBackbone(AlbertConfig.preset(preset)), settings)
    model_dir = save_finetuned(model, task, settings, os.path.join(workdir, "model"),
                               load_tokenizer(SPM, host=True))
    export_model(model_dir, os.path.join(workdir, "export"))
    return os.path.join(workdir, "export")


def read_pairs(data_dir):
    if data_dir and os.path.isdir(data_dir):
        import tasks

        examples = tasks.get("mrpc").read_examples(data_dir, "dev")
        return [(e.text_a, e.text_b) for e in examples]
    words = "the cat sat on a mat while seven dogs ran quickly around old houses".split()
    return [(" ".join(words[i % 5:i % 5 + 9]), " ".join(words[i % 3:i % 3 + 7]))
            for i in range(408)]


def direct(root, pairs, seconds):
    """Pairs/s of `serving_default` on batches of 32, for about `seconds`."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    from albert_tf.serving.versions import newest

    function = tf.saved_model.load(newest(root)[1]).signatures["serving_default"]

    def call(batch):
        function(text_a=tf.constant([a for a, _ in batch]),
                 text_b=tf.constant([b for _, b in batch]))

    call(pairs[:32])
    done, start, i = 0, time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        batch = [pairs[(i + k) % len(pairs)] for k in range(32)]
        call(batch)
        done, i = done + 32, i + 32
    return done / (time.perf_counter() - start)


class Client(threading.Thread):
    """Sends `next_body()` requests one at a time until `stop_at`; records
    `(status, seconds, rows)` of each answer, or `("conn", ...)` on a connection error."""

    def __init__(self, port, name, next_body, stop_at):
        super().__init__(daemon=True)
        self.port, self.path, self.next_body, self.stop_at = port, f"/v1/models/{name}:predict", \
            next_body, stop_at
        self.results = []

    def run(self):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        while time.monotonic() < self.stop_at:
            body, rows = self.next_body()
            start = time.perf_counter()
            try:
                connection.request("POST", self.path, body)
                response = connection.getresponse()
                response.read()
                status = response.status
                if response.getheader("connection", "").lower() == "close":
                    connection.close()
            except (OSError, http.client.HTTPException):
                status = "conn"
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            self.results.append((status, time.perf_counter() - start, rows))


def load(port, name, next_body, clients, seconds):
    stop_at = time.monotonic() + seconds
    threads = [Client(port, name, next_body, stop_at) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [r for t in threads for r in t.results], time.perf_counter() - start


def pair_body(pairs):
    lock, state = threading.Lock(), {"i": 0}

    def next_body():
        with lock:
            a, b = pairs[state["i"] % len(pairs)]
            state["i"] += 1
        return json.dumps({"instances": [{"text_a": a, "text_b": b}]}), 1
    return next_body


HOSTILE = ["", " \t\n ", "😀🏳️‍🌈" * 300, "x" * 3000, "叶老桂认为，浙商银行在杭州。" * 150,
           "\x00\x01\x02\u200b\ufeff\u202e", "ﬁ ½ Ⅻ ǅ İ ß" * 50, "<unk> [CLS] [SEP] [MASK]" * 20]


def mixed_body(pairs, seed=0):
    rng, lock = random.Random(seed), threading.Lock()
    kinds = [
        ("real", 8, lambda: {"instances": [dict(zip(("text_a", "text_b"), rng.choice(pairs)))]}),
        ("hostile", 4, lambda: {"instances": [{"text_a": rng.choice(HOSTILE),
                                               "text_b": rng.choice(HOSTILE)}
                                              for _ in range(rng.randint(1, 4))]}),
        ("columnar", 2, lambda: {"inputs": {"text_a": [rng.choice(HOSTILE)],
                                            "text_b": [rng.choice(pairs)[1]]}}),
        ("malformed", 1, lambda: '{"instances": [{"text_a": "a", '),
        ("wrong inputs", 1, lambda: {"instances": [{"text_a": "a"}]}),
        ("ragged", 1, lambda: {"inputs": {"text_a": ["a", "b"], "text_b": ["c"]}}),
        ("too many rows", 1, lambda: {"instances": [{"text_a": "a", "text_b": "b"}] * 40}),
        ("oversized body", 1, lambda: {"instances": [{"text_a": "y" * (5 << 20), "text_b": ""}]}),
        ("bad ids", 1, lambda: {"signature_name": "encoded", "inputs": {
            "token_ids": [[2, 999999]], "segment_ids": [[0, 0]], "padding_mask": [[1, 1]]}}),
    ]
    weights = [w for _, w, _ in kinds]

    def next_body():
        with lock:
            _, _, make = rng.choices(kinds, weights)[0]
            body = make()
        return (body if isinstance(body, str) else json.dumps(body)), 0
    return next_body


def start_server(root, port, *flags):
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    process = subprocess.Popen([sys.executable, "-m", "albert_tf.serve", f"--model={root}",
                                "--model_name=mrpc", f"--port={port}", *flags],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/v1/models/mrpc")
            if connection.getresponse().status == 200:
                return process
        except OSError:
            time.sleep(0.5)
    raise RuntimeError("the server did not start")


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--export_dir")
    parser.add_argument("--data_dir", default=DEFAULT_DATA)
    parser.add_argument("--preset", default="albert_base",
                        help="the model exported when --export_dir is not given")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--mixed_seconds", type=float, default=20)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--port", type=int, default=18573)
    parser.add_argument("--server_flags", default="--max_batch_size=32 --batch_timeout_ms=2")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    pairs = read_pairs(args.data_dir)
    with tempfile.TemporaryDirectory() as workdir:
        root = args.export_dir or make_export(workdir, args.preset)
        server = start_server(root, args.port, *args.server_flags.split())
        load(args.port, "mrpc", pair_body(pairs), args.clients, 3)  # warm-up
        direct_before = direct(root, pairs, args.seconds / 2)
        results, elapsed = load(args.port, "mrpc", pair_body(pairs), args.clients, args.seconds)
        direct_after = direct(root, pairs, args.seconds / 2)
        mixed, _ = load(args.port, "mrpc", mixed_body(pairs), args.clients, args.mixed_seconds)
        start = time.monotonic()
        server.terminate()
        exit_status, exit_seconds = server.wait(60), time.monotonic() - start
    ok = [seconds for status, seconds, _ in results if status == 200]
    direct_rate = (direct_before + direct_after) / 2
    server_rate = len(ok) / elapsed
    p50, p99 = percentile(ok, 0.5), percentile(ok, 0.99)
    codes = {}
    for status, _, _ in mixed:
        codes[str(status)] = codes.get(str(status), 0) + 1
    bad = sum(n for code, n in codes.items() if code.startswith("5") and code not in ("503", "504"))
    print(machine())
    print(table([
        {"what": "direct, batches of 32", "pairs/s": f"{direct_rate:.1f}",
         "detail": f"before {direct_before:.1f}, after {direct_after:.1f}"},
        {"what": f"albert-tf serve, {args.clients} clients x 1 pair",
         "pairs/s": f"{server_rate:.1f}",
         "detail": f"p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, "
                   f"{len(results) - len(ok)} not 200"},
    ], ["what", "pairs/s", "detail"]))
    print(f"ratio server / direct: {server_rate / direct_rate:.2f} (target >= 0.8); "
          f"p99 / p50: {p99 / p50:.2f} (target <= 3)")
    print(f"mixed load {args.mixed_seconds:g} s, {len(mixed)} requests: "
          f"{json.dumps(dict(sorted(codes.items())))}; undocumented 5xx: {bad}")
    print(f"SIGTERM: exit status {exit_status} after {exit_seconds:.1f} s")
    emit({"direct_pairs_per_s": direct_rate, "server_pairs_per_s": server_rate,
          "ratio": server_rate / direct_rate, "p50_s": p50, "p99_s": p99,
          "mixed_codes": codes, "undocumented_5xx": bad, "sigterm_exit": exit_status,
          "sigterm_seconds": exit_seconds})


if __name__ == "__main__":
    main()
