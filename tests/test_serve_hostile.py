"""`albert-tf serve` against what anyone who reaches its port can send: routes that
are not documented, model control without its token, bodies that nest deep or
carry the wrong types, oversized bodies written before the answer is read, slow
and idle connections, huge headers, a second server on the port.

One server for the module (model control on, behind a token); a second one,
with a predict token, for the tests that need their own.
"""

import http.client
import json
import shutil
import socket
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("kserve", reason="albert-tf serve needs requirements-serve.txt installed")

import cli_helpers  # noqa: E402
import export_helpers  # noqa: E402
from serve_helpers import Server  # noqa: E402

ADMIN = "s3cret-admin"
BODY = {"instances": [{"text_a": "A man sleeps.", "text_b": "He rests."}]}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    version_dir = export_helpers.exported(tmp_path_factory, "rte")[0]
    base = tmp_path_factory.mktemp("hostile")
    shutil.copytree(version_dir, base / "rte" / "1")
    (base / "admin").write_text(ADMIN + "\n")
    server = Server(str(base / "rte"), "--max_body_bytes=40000", "--enable_model_control",
                    f"--admin_token_file={base / 'admin'}", "--client_timeout_s=2",
                    "--keep_alive_s=2", "--max_connections=40", "--max_header_bytes=8192")
    yield server, base
    if server.process.poll() is None:
        server.process.kill()
        server.process.communicate()


@pytest.mark.parametrize("method, path", [
    ("GET", "/v1/models"), ("GET", "/v2/models/rte"), ("GET", "/v2/health/ready"),
    ("POST", "/v2/models/rte/infer"), ("GET", "/docs"), ("GET", "/openapi.json"),
    ("POST", "/openai/v1/completions")])
def test_only_documented_routes_answer(served, method, path):
    server, _ = served
    assert server.request(method, path, {} if method == "POST" else None)[0] in (404, 405)
    assert server.get("/")[0] == 200 and server.get("/metrics")[0] == 200


def test_model_control_needs_the_admin_token(served):
    server, _ = served
    unload = "/v2/repository/models/rte/unload"
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": ADMIN}):
        status, answer = server.request("POST", unload, b"", headers)
        assert status == 401 and "Bearer" in answer["error"], answer
    assert server.predict(BODY)[0] == 200
    bearer = {"Authorization": f"Bearer {ADMIN}"}
    assert server.request("POST", unload, b"", bearer)[0] == 200
    assert server.predict(BODY)[0] == 404
    assert server.request("POST", "/v2/repository/models/rte/load", b"", bearer)[0] == 200
    assert server.predict(BODY)[0] == 200


@pytest.mark.parametrize("body, says", [
    ({"signature_name": [], "instances": BODY["instances"]}, "must be a string"),
    ({"signature_name": {"a": 1}, "instances": BODY["instances"]}, "must be a string"),
    ("[" * 1000 + "]" * 1000, "deeper than 32"),
    ("{\"instances\": " + "[" * 5000, "deeper than 32"),
    ("]]]]", "deeper than 32"),
])
def test_wrong_types_and_deep_nesting_are_400_whatever_the_content_type(served, body, says):
    server, _ = served
    for headers in ({}, {"Content-Type": "application/json"}):
        text = body if isinstance(body, str) else json.dumps(body)
        status, answer = server.request("POST", "/v1/models/rte:predict", text, headers)
        assert status == 400 and says in answer["error"], answer


def test_an_oversized_body_is_a_413_for_a_client_that_writes_it_all_first(served):
    server, _ = served
    for size in (5, 20):
        data = b'{"instances": ["' + b"x" * (size * 2**20) + b'"]}'
        request = urllib.request.Request(
            f"http://127.0.0.1:{server.port}/v1/models/rte:predict", data=data,
            headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(request, timeout=60)
        assert e.value.code == 413 and "--max_body_bytes" in json.loads(e.value.read())["error"]


def _connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    return s


def _closed(s, within):
    """True when the server closes `s` within `within` seconds."""
    s.settimeout(within)
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                return True
    except (socket.timeout, TimeoutError):
        return False
    except ConnectionResetError:
        return True


def test_slow_headers_and_idle_connections_are_closed(served):
    server, _ = served
    slow, idle = _connect(server.port), _connect(server.port)
    slow.sendall(b"POST /v1/models/rte:predict HTTP/1.1\r\n")
    start = time.monotonic()
    for _ in range(3):  # a byte a second: under no per-byte timeout, over the deadline
        time.sleep(1)
        try:
            slow.sendall(b"X")
        except OSError:
            break
    assert _closed(slow, 5) and _closed(idle, 5)
    assert time.monotonic() - start < 8
    assert server.predict(BODY)[0] == 200


def test_open_connections_are_capped_and_valid_requests_still_answered(served):
    server, _ = served
    idle = [_connect(server.port) for _ in range(120)]
    try:
        assert server.predict(BODY)[0] == 200
        time.sleep(0.5)
        open_ = sum(not _closed(s, 0.01) for s in idle)
        assert open_ <= 40, open_
    finally:
        for s in idle:
            s.close()


def test_huge_or_countless_headers_are_refused(served):
    server, _ = served
    for headers in ({"X-Big": "a" * 2**20}, {f"X-{i}": "b" for i in range(10000)}):
        try:
            status = server.request("GET", "/v1/models/rte", headers=headers)[0]
        except (ConnectionError, http.client.HTTPException):
            status = "closed"
        assert status in (400, 431, "closed"), status
    assert server.get("/v1/models/rte")[0] == 200


@pytest.mark.slow  # two more server processes (about 24 s of CPU)
def test_predict_token_and_a_second_server_on_the_port(served, tmp_path):
    server, base = served
    (tmp_path / "api").write_text("client-token")
    other = Server(str(base / "rte"), f"--api_token_file={tmp_path / 'api'}")
    try:
        status, answer = other.predict(BODY)
        assert status == 401 and "Bearer" in answer["error"]
        assert other.request("POST", "/v1/models/rte:predict", BODY,
                             {"Authorization": "Bearer client-token"})[0] == 200
        assert other.get("/v1/models/rte")[0] == 200  # probes need no token
        loser = cli_helpers.start("albert_tf.serve", f"--model={base / 'rte'}",
                                  f"--port={other.port}")
        output = loser.communicate(timeout=120)[0]
        assert loser.returncode == 1 and "serving" not in output.replace("albert-tf serve", "")
        assert f"cannot listen on 127.0.0.1:{other.port}" in output.splitlines()[-1]
    finally:
        other.stop()


def test_control_flags_are_checked_before_anything_loads(tmp_path):
    from albert_tf.commands import serve  # its program, in this process

    assert "--enable_model_control needs --admin_token_file" in cli_helpers.exit_line(
        serve, f"--model={tmp_path}", "--enable_model_control")
    (tmp_path / "empty").write_text("")
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "saved_model.pb").write_bytes(b"x")  # loading it would fail otherwise
    assert f"--api_token_file={tmp_path / 'empty'}" in cli_helpers.exit_line(
        serve, f"--model={tmp_path}", f"--api_token_file={tmp_path / 'empty'}")


def test_refusals_are_logged_once_per_interval_with_their_counts(caplog):
    import logging

    from albert_tf.serving.connections import Refusals

    refusals = Refusals()
    with caplog.at_level(logging.WARNING, "albert_tf.serve"):
        for _ in range(500):
            refusals.add("400 answers")
        refusals.add("413 answers")
        refusals.logged_at -= Refusals.interval_s  # the interval has passed
        refusals.add("413 answers")
    assert [r.getMessage() for r in caplog.records] == [
        "refused since the last report: 1 400 answers",
        "refused since the last report: 499 400 answers, 2 413 answers"]


# A server of its own stopped with requests still waiting (~20 s).
@pytest.mark.slow
def test_requests_cut_by_the_end_of_the_grace_period_get_a_json_503(served):
    import threading

    _, base = served
    server = Server(str(base / "rte"), "--shutdown_timeout_s=2", "--max_queue_size=300",
                    "--max_batch_size=16")
    body = {"instances": [{"text_a": "x " * 300, "text_b": "y " * 300}] * 16}
    answers, sent = [], threading.Semaphore(0)

    def client():
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        connection.request("POST", "/v1/models/rte:predict", json.dumps(body))
        sent.release()
        response = connection.getresponse()
        answers.append((response.status, response.getheader("content-type"),
                        json.loads(response.read())))

    threads = [threading.Thread(target=client) for _ in range(150)]
    for t in threads:
        t.start()
    for _ in threads:
        sent.acquire()
    time.sleep(0.5)
    returncode, _, output = server.stop()
    for t in threads:
        t.join(60)
    codes = sorted({status for status, _, _ in answers})
    assert len(answers) == 150 and set(codes) <= {200, 503} and 503 in codes, (codes, output)
    for status, kind, answer in answers:
        if status == 503:
            assert kind == "application/json" and "shutting down" in answer["error"]
    assert returncode == 0
