"""`albert-tf serve` under load (slow tier): a full queue answers 503 at once, a late
answer 504; a mixed load of real, hostile and malformed requests gets no 5xx but
those, and SIGTERM in its middle answers every accepted request and exits 0."""

import http.client
import json
import random
import shutil
import threading
import time

import pytest

pytest.importorskip("kserve", reason="albert-tf serve needs requirements-serve.txt installed")

import export_helpers  # noqa: E402
from serve_helpers import HOSTILE, PAIRS, Server  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    version_dir = export_helpers.exported(tmp_path_factory, "mrpc")[0]
    folder = tmp_path_factory.mktemp("serve_load") / "rte"
    shutil.copytree(version_dir, folder / "1")
    return str(folder)


def post(port, body, answers):
    """Posts `body` on a fresh connection; appends `(sent_at, status, seconds)`, status
    "conn" when the connection failed."""
    start = time.monotonic()
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        connection.request("POST", "/v1/models/rte:predict", body)
        sent = time.monotonic()
        response = connection.getresponse()
        response.read()
        answers.append((sent, response.status, time.monotonic() - start))
        connection.close()
    except OSError:
        answers.append((start, "conn", time.monotonic() - start))


def test_a_full_queue_answers_503_at_once_and_a_late_answer_504(root):
    server = Server(root, "--max_queue_size=1", "--request_timeout_s=0.001",
                    "--batch_timeout_ms=0")
    body = json.dumps({"instances": [{"text_a": "x " * 1500, "text_b": t} for t in HOSTILE]})
    answers = []
    threads = [threading.Thread(target=post, args=(server.port, body, answers))
               for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    returncode, _, _ = server.stop()
    codes = {status for _, status, _ in answers}
    assert codes == {503, 504}, answers
    assert max(s for _, status, s in answers if status == 503) < 5
    assert returncode == 0


def mixed_body(rng):
    kind = rng.randrange(6)
    if kind == 0:
        return json.dumps({"instances": [{"text_a": rng.choice(HOSTILE),
                                          "text_b": rng.choice(HOSTILE)}] * rng.randint(1, 4)})
    if kind == 1:
        return '{"instances": [{"text_a": '
    if kind == 2:
        return json.dumps({"inputs": {"text_a": ["a", "b"], "text_b": ["c"]}})
    if kind == 3:
        return json.dumps({"signature_name": "encoded", "inputs": {
            "token_ids": [[2, 999999]], "segment_ids": [[0, 0]], "padding_mask": [[1, 1]]}})
    a, b = rng.choice(PAIRS)
    return json.dumps({"instances": [{"text_a": a, "text_b": b}]})


def test_sigterm_in_a_mixed_load_answers_every_accepted_request(root):
    server = Server(root, "--max_batch_size=8")
    answers, stop = [], threading.Event()

    def client(seed):
        rng = random.Random(seed)
        while not stop.is_set():
            post(server.port, mixed_body(rng), answers)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    time.sleep(10)
    terminated = time.monotonic()
    server.process.terminate()
    returncode = server.process.wait(40)
    exit_seconds = time.monotonic() - terminated
    stop.set()
    for t in threads:
        t.join(60)
    before = [a for a in answers if a[0] < terminated - 0.2]
    assert len(before) > 50
    assert {status for _, status, _ in before} <= {200, 400}, sorted({a[1] for a in before},
                                                                      key=str)
    assert {200, 400} <= {status for _, status, _ in before}
    assert all(status < 500 for _, status, _ in answers if status != "conn"), answers
    assert returncode == 0 and exit_seconds < 30
