"""`albert-tf serve` over a long mixed load of valid and hostile requests.

    python bench/serving_soak.py [--minutes=30] [--export_dir=exports/mrpc]
                                 [--preset=albert_tiny] [--clients=4] [--window_minutes=5]

`--clients` threads send, one request at a time each, the mixed load of
`serving_load.py` (real pairs, hostile texts, malformed JSON, wrong inputs,
oversized bodies, too many rows, ids out of range) plus deep nesting, wrong
field types and undocumented routes, for `--minutes`. Reports the server's RSS
at the start and the end, p50 and p99 of the 200 answers per window of
`--window_minutes`, and every non-200 by status code. Targets: RSS flat, p99
steady across windows, no 5xx other than the documented 503 and 504.
"""

import argparse
import json
import random
import tempfile
import threading
import time

from common import emit, machine, table
from serving_flood import rss_mb, start
from serving_load import Client, HOSTILE, make_export, mixed_body, percentile, read_pairs


def soak_body(pairs, seed):
    """`serving_load.mixed_body`, with a share of what a hostile client adds."""
    mixed, rng, lock = mixed_body(pairs, seed), random.Random(seed + 1), threading.Lock()
    extra = [
        "[" * 3000 + "]" * 3000,
        json.dumps({"signature_name": [], "instances": [{"text_a": "a", "text_b": "b"}]}),
        json.dumps({"instances": [{"text_a": rng.choice(HOSTILE), "text_b": 7}]}),
        json.dumps({"signature_name": "encoded", "inputs": {
            "token_ids": [[2, -5]], "segment_ids": [[0, -1]], "padding_mask": [[1, 7]]}}),
    ]

    def next_body():
        with lock:
            pick = rng.random()
        if pick < 0.1:
            return rng.choice(extra), 0
        return mixed()
    return next_body


class Stamped(list):
    """A client's results, each `(window, status, seconds, rows)`: the window of
    `width` seconds since `begin` in which it was answered."""

    def __init__(self, begin, width):
        super().__init__()
        self.begin, self.width = begin, width

    def append(self, result):
        super().append((int((time.monotonic() - self.begin) // self.width), *result))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--window_minutes", type=float, default=5)
    parser.add_argument("--export_dir")
    parser.add_argument("--preset", default="albert_tiny")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--port", type=int, default=8617)
    args = parser.parse_args()
    root = args.export_dir or make_export(tempfile.mkdtemp(), args.preset)
    process, lines = start(root, args.port)
    pairs = read_pairs(None)
    start_rss, begin = rss_mb(process.pid), time.monotonic()
    stop_at = begin + 60 * args.minutes
    width = 60 * args.window_minutes
    clients = [Client(args.port, "mrpc", soak_body(pairs, seed), stop_at)
               for seed in range(args.clients)]
    for client in clients:
        client.results = Stamped(begin, width)
        client.start()
    for client in clients:
        client.join()
    end_rss = rss_mb(process.pid)
    process.terminate()
    process.wait(60)
    windows, codes, count = {}, {}, 0
    for client in clients:
        for window, status, seconds, _ in client.results:
            count += 1
            if status == 200:
                windows.setdefault(window, []).append(seconds)
            else:
                codes[str(status)] = codes.get(str(status), 0) + 1
    rows = [{"window": f"{w * args.window_minutes:g}-{(w + 1) * args.window_minutes:g} min",
             "200s": len(s), "p50_ms": round(1000 * percentile(s, 0.5), 1),
             "p99_ms": round(1000 * percentile(s, 0.99), 1)} for w, s in sorted(windows.items())]
    print(table(rows, ["window", "200s", "p50_ms", "p99_ms"]))
    emit({"bench": "serving_soak", "machine": machine(), "minutes": args.minutes,
          "requests": count, "rss_mb_start": round(start_rss),
          "rss_mb_end": round(end_rss), "windows": rows, "non_200": codes,
          "server_log_lines": len(lines), "exit_status": process.returncode})


if __name__ == "__main__":
    main()
