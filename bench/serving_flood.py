"""`albert-tf serve` under a connection flood: idle sockets, slow-header clients and
valid requests at once.

    python bench/serving_flood.py [--export_dir=exports/mrpc] [--preset=albert_tiny]
                                  [--idle=5000] [--slow=20] [--seconds=30] [--clients=4]

Opens `--idle` connections that send nothing and `--slow` clients that send a
request's headers a byte every 2 s, while `--clients` threads send valid pairs
one at a time for `--seconds`. Reports the valid requests' statuses, p50 and
p99, how many of the flood's sockets the server had closed by the end, the
server's RSS and its number of log lines (refusals are logged once per
interval, not per socket). Targets: every valid request 200, the flood's
sockets closed, a few log lines.
"""

import argparse
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time

from common import ROOT, emit, machine
from serving_load import load, make_export, pair_body, percentile, read_pairs

sys.path.insert(0, ROOT)


def start(root, port, *flags):
    process = subprocess.Popen(
        [sys.executable, "-m", "albert_tf.serve", f"--model={root}", "--model_name=mrpc",
         f"--port={port}", *flags], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3"))
    lines = []
    threading.Thread(target=lambda: lines.extend(process.stdout), daemon=True).start()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2):
                return process, lines
        except OSError:
            time.sleep(0.5)
    raise RuntimeError("the server did not start")


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


def closed(sock):
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def slow_client(port, stop_at, sockets):
    s = socket.create_connection(("127.0.0.1", port))
    sockets.append(s)
    for byte in b"POST /v1/models/mrpc:predict HTTP/1.1\r\nHost: x\r\n" * 100:
        if time.monotonic() > stop_at:
            return
        try:
            s.sendall(bytes([byte]))
        except OSError:
            return
        time.sleep(2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--export_dir")
    parser.add_argument("--preset", default="albert_tiny")
    parser.add_argument("--idle", type=int, default=5000)
    parser.add_argument("--slow", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--port", type=int, default=8613)
    parser.add_argument("--flags", default="", help="extra serve flags, space separated")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    root = args.export_dir or make_export(tempfile.mkdtemp(), args.preset)
    process, lines = start(root, args.port, *args.flags.split())
    start_rss, stop_at = rss_mb(process.pid), time.monotonic() + args.seconds
    sockets, idle = [], []
    for _ in range(args.slow):
        threading.Thread(target=slow_client, args=(args.port, stop_at, sockets),
                         daemon=True).start()
    for _ in range(args.idle):
        try:
            idle.append(socket.create_connection(("127.0.0.1", args.port), timeout=5))
        except OSError:
            break
    pairs = read_pairs(None)
    results, _ = load(args.port, "mrpc", pair_body(pairs), args.clients,
                   max(1.0, stop_at - time.monotonic()))
    flood = idle + sockets
    still_open = sum(not closed(s) for s in flood)
    statuses = {}
    for status, _, _ in results:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    seconds = [s for status, s, _ in results if status == 200]
    end_rss = rss_mb(process.pid)
    process.terminate()
    process.wait(60)
    emit({"bench": "serving_flood", "machine": machine(), "idle_opened": len(idle),
          "slow": args.slow, "valid_statuses": statuses,
          "p50_ms": round(1000 * percentile(seconds, 0.5), 1) if seconds else None,
          "p99_ms": round(1000 * percentile(seconds, 0.99), 1) if seconds else None,
          "flood_sockets_still_open": still_open, "flood_sockets": len(flood),
          "rss_mb_start": round(start_rss), "rss_mb_end": round(end_rss),
          "server_log_lines": len(lines), "exit_status": process.returncode})


if __name__ == "__main__":
    main()
