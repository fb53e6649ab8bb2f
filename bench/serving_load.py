"""`albert-tf serve` under load: server-side batching against direct calls, and a mixed
load of real and hostile requests.

    python bench/serving_load.py [--export_dir=exports/mrpc] [--data_dir=../shared/data/glue/MRPC]
                                 [--seconds=20] [--mixed_seconds=20] [--clients=16]
                                 [--baseline_code=DIR] [--rounds=2]

1. direct: the export's `serving_default` called in this process on batches of 32
   MRPC dev pairs (pairs/s), measured before and after the server load; and on
   batches of `--clients` (at most 32), the largest the clients can fill;
2. server: `albert-tf serve` on 127.0.0.1, `--clients` threads each sending one
   pair a request, one request at a time (keep-alive): pairs/s, p50 and p99;
3. mixed: the same clients for `--mixed_seconds` sending real pairs mixed with
   hostile texts, malformed JSON, wrong inputs, oversized bodies and batches,
   ids out of range: the answers counted by status (5xx other than the
   documented 503 and 504 must be 0);
4. SIGTERM to the server: its exit status and time to exit.

Where the time goes: the CPU seconds of the server process per request (and of its
main thread, the event loop: HTTP, JSON, KServe's request path, batching), of this
process (the clients) per request during the server load, and of the direct calls
per pair (Linux: /proc). `--baseline_code=DIR` serves the same export a second time
from another checkout's code (e.g. `git worktree add /tmp/before main`), the two
servers loaded in turn, `--rounds` times each, so that a change is measured side by
side with what it changes on the same busy machine.

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
    from albert_tf import tasks
    from albert_tf.backbone import AlbertBackbone
    from albert_tf.tokenizer.loading import load_tokenizer
    from albert_tf.config import AlbertConfig
    from albert_tf.training.finetuning import save_finetuned
    from albert_tf.training.settings import FinetuneSettings
    from albert_tf.tasks.finetuned import export_model

    task = tasks.get("mrpc")
    settings = FinetuneSettings(task="mrpc", output_dir=workdir, max_seq_length=128)
    model = task.build_model(AlbertBackbone(AlbertConfig.preset(preset)), settings)
    model_dir = save_finetuned(model, task, settings, os.path.join(workdir, "model"),
                               load_tokenizer(SPM, host=True))
    export_model(model_dir, os.path.join(workdir, "export"))
    return os.path.join(workdir, "export")


def read_pairs(data_dir):
    if data_dir and os.path.isdir(data_dir):
        from albert_tf import tasks

        examples = tasks.get("mrpc").read_examples(data_dir, "dev")
        return [(e.text_a, e.text_b) for e in examples]
    words = "the cat sat on a mat while seven dogs ran quickly around old houses".split()
    return [(" ".join(words[i % 5:i % 5 + 9]), " ".join(words[i % 3:i % 3 + 7]))
            for i in range(408)]


def direct(root, pairs, seconds, batch_size=32):
    """`(pairs/s, CPU seconds a pair)` of `serving_default` on batches of `batch_size`,
    for about `seconds`."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    from albert_tf.serving.versions import newest

    function = tf.saved_model.load(newest(root)[1]).signatures["serving_default"]

    def call(batch):
        function(text_a=tf.constant([a for a, _ in batch]),
                 text_b=tf.constant([b for _, b in batch]))

    call(pairs[:batch_size])
    done, start, cpu, i = 0, time.perf_counter(), cpu_seconds(), 0
    while time.perf_counter() - start < seconds:
        batch = [pairs[(i + k) % len(pairs)] for k in range(batch_size)]
        call(batch)
        done, i = done + batch_size, i + batch_size
    return done / (time.perf_counter() - start), (cpu_seconds() - cpu) / done


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


def start_server(root, port, *flags, code=ROOT):
    env = dict(os.environ, PYTHONPATH=code, TF_CPP_MIN_LOG_LEVEL="3")
    process = subprocess.Popen([sys.executable, "-m", "albert_tf.serve", f"--model={root}",
                                "--model_name=mrpc", f"--port={port}", *flags],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                               cwd=code)
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


def cpu_seconds(pid=None, thread=None):
    """User + system CPU seconds so far of a process, all its threads (None: this one),
    or of its thread `thread` (the server's main thread runs its event loop)."""
    if pid is None:
        times = os.times()
        return times.user + times.system
    path = f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat"
    try:
        with open(path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def batch_rows(port):
    """`(rows, calls)` of the model so far, from the server's /metrics."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", "/metrics")
    lines = dict(line.rsplit(" ", 1) for line in connection.getresponse().read().decode()
                 .splitlines() if line.startswith("albert_tf_serve_batch_rows_"))
    return (float(lines["albert_tf_serve_batch_rows_sum"]),
            float(lines["albert_tf_serve_batch_rows_count"]))


class Served:
    """One server under load, its answers and CPU seconds summed over the rounds."""

    def __init__(self, label, process, port):
        self.label, self.process, self.port = label, process, port
        self.results, self.elapsed = [], 0.0
        self.server_cpu = self.loop_cpu = self.client_cpu = self.rows = self.calls = 0.0

    def load(self, pairs, clients, seconds):
        pid = self.process.pid
        server, loop, client = cpu_seconds(pid), cpu_seconds(pid, pid), cpu_seconds()
        rows, calls = batch_rows(self.port)
        results, elapsed = load(self.port, "mrpc", pair_body(pairs), clients, seconds)
        self.server_cpu += cpu_seconds(pid) - server
        self.loop_cpu += cpu_seconds(pid, pid) - loop
        self.client_cpu += cpu_seconds() - client
        rows_after, calls_after = batch_rows(self.port)
        self.rows += rows_after - rows
        self.calls += calls_after - calls
        self.results += results
        self.elapsed += elapsed

    def row(self, direct_rate, clients):
        ok = [seconds for status, seconds, _ in self.results if status == 200]
        rate = len(ok) / self.elapsed
        p50, p99 = percentile(ok, 0.5), percentile(ok, 0.99)
        return {"what": f"albert-tf serve ({self.label}), {clients} clients x 1 pair",
                "pairs/s": f"{rate:.1f}", "ratio": f"{rate / direct_rate:.2f}",
                "p50, p99": f"{p50 * 1000:.0f} ms, {p99 * 1000:.0f} ms ({p99 / p50:.2f})",
                "CPU ms a request": f"server {1000 * self.server_cpu / len(self.results):.2f} "
                                    f"(event loop {1000 * self.loop_cpu / len(self.results):.2f}"
                                    f"), client {1000 * self.client_cpu / len(self.results):.2f}",
                "detail": f"{self.rows / max(self.calls, 1):.1f} rows a call, "
                          f"{len(self.results) - len(ok)} not 200"}, rate, p50, p99


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
    parser.add_argument("--baseline_code", help="a checkout whose albert_tf serves the same "
                        "export beside this one's, loaded in turn (before/after a change)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="with --baseline_code: loads of --seconds / rounds each, in turn")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    pairs = read_pairs(args.data_dir)
    flags = args.server_flags.split()
    with tempfile.TemporaryDirectory() as workdir:
        root = args.export_dir or make_export(workdir, args.preset)
        served = [Served("this code", start_server(root, args.port, *flags), args.port)]
        if args.baseline_code:
            code = os.path.abspath(args.baseline_code)
            served.append(Served(f"code of {code}",
                                 start_server(root, args.port + 1, *flags, code=code),
                                 args.port + 1))
        for s in served:
            load(s.port, "mrpc", pair_body(pairs), args.clients, 3)  # warm-up
        direct_before, cpu_before = direct(root, pairs, args.seconds / 2)
        rounds = args.rounds if args.baseline_code else 1
        for _ in range(rounds):
            for s in served:
                s.load(pairs, args.clients, args.seconds / rounds)
        direct_after, cpu_after = direct(root, pairs, args.seconds / 2)
        # The largest batch that clients sending one pair at a time can fill.
        filled = min(args.clients, 32)
        direct_filled, cpu_filled = direct(root, pairs, args.seconds / 4, filled)
        direct_cpu_per_pair = (cpu_before + cpu_after) / 2
        for s in served[1:]:
            s.process.terminate()
            s.process.wait(60)
        server = served[0]
        mixed, _ = load(args.port, "mrpc", mixed_body(pairs), args.clients, args.mixed_seconds)
        start = time.monotonic()
        server.process.terminate()
        exit_status, exit_seconds = server.process.wait(60), time.monotonic() - start
    direct_rate = (direct_before + direct_after) / 2
    rows = [{"what": "direct, batches of 32", "pairs/s": f"{direct_rate:.1f}", "ratio": "1",
             "p50, p99": "", "CPU ms a request": f"{1000 * direct_cpu_per_pair:.2f} a pair",
             "detail": f"before {direct_before:.1f}, after {direct_after:.1f}"},
            {"what": f"direct, batches of {filled}", "pairs/s": f"{direct_filled:.1f}",
             "ratio": f"{direct_filled / direct_rate:.2f}", "p50, p99": "",
             "CPU ms a request": f"{1000 * cpu_filled:.2f} a pair", "detail": ""}]
    figures = {}
    for s in served:
        row, rate, p50, p99 = s.row(direct_rate, args.clients)
        rows.append(row)
        figures[s.label] = {"server_pairs_per_s": rate, "ratio": rate / direct_rate,
                            "p50_s": p50, "p99_s": p99,
                            "server_cpu_ms_per_request": 1000 * s.server_cpu / len(s.results),
                            "event_loop_cpu_ms_per_request": 1000 * s.loop_cpu / len(s.results),
                            "rows_per_call": s.rows / max(s.calls, 1),
                            "client_cpu_ms_per_request": 1000 * s.client_cpu / len(s.results)}
    codes = {}
    for status, _, _ in mixed:
        codes[str(status)] = codes.get(str(status), 0) + 1
    bad = sum(n for code, n in codes.items() if code.startswith("5") and code not in ("503", "504"))
    print(machine())
    print(table(rows, ["what", "pairs/s", "ratio", "p50, p99", "CPU ms a request", "detail"]))
    this = figures["this code"]
    print(f"ratio server / direct: {this['ratio']:.2f} (target >= 0.8); "
          f"p99 / p50: {this['p99_s'] / this['p50_s']:.2f} (target <= 3)")
    print(f"mixed load {args.mixed_seconds:g} s, {len(mixed)} requests: "
          f"{json.dumps(dict(sorted(codes.items())))}; undocumented 5xx: {bad}")
    print(f"SIGTERM: exit status {exit_status} after {exit_seconds:.1f} s")
    emit({"direct_pairs_per_s": direct_rate, "direct_cpu_ms_per_pair": 1000 * direct_cpu_per_pair,
          f"direct_{filled}_pairs_per_s": direct_filled,
          f"direct_{filled}_cpu_ms_per_pair": 1000 * cpu_filled,
          "server_pairs_per_s": this["server_pairs_per_s"], "ratio": this["ratio"],
          "p50_s": this["p50_s"], "p99_s": this["p99_s"], "servers": figures,
          "mixed_codes": codes, "undocumented_5xx": bad, "sigterm_exit": exit_status,
          "sigterm_seconds": exit_seconds})


if __name__ == "__main__":
    main()
