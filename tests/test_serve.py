"""`albert-tf serve` as a TF Serving client sees it: one server process on 127.0.0.1,
started once for the module on a tiny pair-classification export.

Status, metadata, both request formats equal to calling the SavedModel directly,
the limits (body, rows, malformed JSON, inputs the signature refuses: 4xx, never
5xx), the metrics, a new version picked up, and SIGTERM in the middle of requests
(every accepted one answered, exit 0). The long mixed load is in test_serve_load.py.
"""

import os
import shutil
import threading
import time

import numpy as np
import pytest

pytest.importorskip("kserve", reason="albert-tf serve needs requirements-serve.txt installed")

import export_helpers  # noqa: E402
import serve_helpers  # noqa: E402
from serve_helpers import HOSTILE, PAIRS, Server  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))



@pytest.fixture(scope="module")
def served(tmp_path_factory):
    version_dir = export_helpers.exported(tmp_path_factory, "rte")[0]
    root = tmp_path_factory.mktemp("serve") / "rte"
    shutil.copytree(version_dir, root / "1")
    server = Server(str(root), "--max_batch_size=10", "--max_body_bytes=40000", "--poll_s=0.3")
    yield server, version_dir
    if server.process.poll() is None:
        server.process.kill()
        server.process.communicate()


def direct(version_dir, signature="serving_default", **inputs):
    import tensorflow as tf

    function = export_helpers.signature(version_dir, signature)
    return {k: v.numpy() for k, v in function(**{k: tf.constant(v) for k, v in
                                                 inputs.items()}).items()}


def test_status_and_metadata_as_tf_serving_gives_them(served):
    server, version_dir = served
    assert server.get("/v1/models/rte") == (200, {"model_version_status": [
        {"version": "1", "state": "AVAILABLE", "status": {"error_code": "OK",
                                                          "error_message": ""}}]})
    status, metadata = server.get("/v1/models/rte/metadata")
    assert status == 200
    assert metadata["model_spec"] == {"name": "rte", "signature_name": "", "version": "1"}
    signatures = metadata["metadata"]["signature_def"]["signature_def"]
    assert sorted(signatures) == ["encoded", "serving_default"]
    default = signatures["serving_default"]
    assert default["method_name"] == "tensorflow/serving/predict"
    assert {n: (v["dtype"], [d["size"] for d in v["tensor_shape"]["dim"]])
            for n, v in default["inputs"].items()} == {"text_a": ("DT_STRING", ["-1"]),
                                                       "text_b": ("DT_STRING", ["-1"])}
    assert sorted(default["outputs"]) == ["label", "label_id", "probabilities"]
    assert server.get("/v1/models/nope")[0] == 404
    assert server.get("/v1/models/rte/versions/7")[0] == 404


def test_every_documented_rte_request_is_valid_and_answered(served):
    server, version_dir = served
    requests = serve_helpers.documented_requests(ROOT)
    # The models the examples call; each served by a test (the others in test_serve_docs.py).
    assert sorted({r.model for r in requests}) == ["c3", "chid", "ner", "rte", "squad_v2"]
    rte = [r for r in requests if r.model == "rte"]
    assert sorted(r.kind or "metadata" for r in rte) == [
        "metadata", "model_version_status", "outputs", "outputs", "predictions"]
    assert [r.answer is not None for r in rte].count(True) == 2  # status, columnar
    serve_helpers.check_documented(server, rte, export_helpers.export_info(version_dir))


def test_both_request_formats_answer_what_the_savedmodel_gives(served):
    server, version_dir = served
    text_a, text_b = [a for a, _ in PAIRS], [b for _, b in PAIRS]
    want = direct(version_dir, text_a=text_a, text_b=text_b)
    status, rows = server.predict({"signature_name": "serving_default",
                                   "instances": [{"text_a": a, "text_b": b} for a, b in PAIRS]})
    assert status == 200
    assert [r["label"] for r in rows["predictions"]] == [x.decode() for x in want["label"]]
    assert [r["label_id"] for r in rows["predictions"]] == want["label_id"].tolist()
    np.testing.assert_array_equal(np.array([r["probabilities"] for r in rows["predictions"]],
                                           np.float32), want["probabilities"])
    status, columns = server.predict({"inputs": {"text_a": text_a, "text_b": text_b}})
    assert status == 200
    assert columns["outputs"]["label_id"] == want["label_id"].tolist()
    np.testing.assert_array_equal(np.array(columns["outputs"]["probabilities"], np.float32),
                                  want["probabilities"])
    # The `encoded` signature (int32 inputs, not batched across requests), on version 1 by path.
    ids = [[2, 48, 1291, 3, 0], [2, 13, 3, 9, 3]]
    inputs = {"token_ids": ids, "segment_ids": [[0, 0, 0, 0, 0], [0, 0, 0, 1, 1]],
              "padding_mask": [[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]}
    status, encoded = server.predict({"signature_name": "encoded", "inputs": inputs}, version=1)
    assert status == 200
    want = direct(version_dir, "encoded", **{k: np.int32(v) for k, v in inputs.items()})
    np.testing.assert_array_equal(np.array(encoded["outputs"], np.float32), want["logits"])


def test_a_request_over_the_batch_size_runs_in_parts_and_answers_every_row(served):
    server, version_dir = served
    pairs = [(f"{a} {i}", b) for i in range(4) for a, b in PAIRS][:23]
    want = direct(version_dir, text_a=[a for a, _ in pairs], text_b=[b for _, b in pairs])
    status, rows = server.predict({"instances": [{"text_a": a, "text_b": b} for a, b in pairs]})
    assert status == 200 and len(rows["predictions"]) == 23  # 3 calls of 10, 10 and 3 rows
    np.testing.assert_allclose([r["probabilities"] for r in rows["predictions"]],
                               want["probabilities"], atol=1e-6)


def test_the_training_files_columns_are_accepted_and_a_wrong_method_is_405(served):
    server, _ = served
    pairs = {"instances": [{"text_a": a, "text_b": b} for a, b in PAIRS[:3]]}
    by_column = {"instances": [{"sentence1": a, "sentence2": b} for a, b in PAIRS[:3]]}
    assert server.predict(by_column) == server.predict(pairs)
    assert server.predict({"inputs": {"sentence1": ["a"], "sentence2": ["b"]}})[0] == 200
    status, answer = server.predict({"instances": [{"sentence": "hello"}]})
    assert status == 400 and answer["error"] == (
        "instances[0]: unknown 'sentence'; missing 'text_a', 'text_b'; the signature takes "
        "text_a, text_b (or the columns it was trained on: text_a as 'sentence1', text_b as "
        "'sentence2')")
    for path in ("/v1/models/rte:predict", "/v1/models/rte/versions/1:predict"):
        status, answer = server.request("GET", path)
        assert status == 405 and ":predict takes POST" in answer["error"], (path, answer)


@pytest.mark.parametrize("body, status, says", [
    ("{\"instances\": [", 400, "Unrecognized request format"),
    ({"instances": [{"text_a": "a"}]}, 400, "missing 'text_b'"),
    ({"instances": [{"text_a": "a", "text_b": "b", "text_c": "c"}]}, 400, "unknown 'text_c'"),
    ({"inputs": {"text_a": ["a", "b"], "text_b": ["c"]}}, 400, "text_a 2 rows, text_b 1 row"),
    ({"inputs": {"text_a": [["a"]], "text_b": [["c"]]}}, 400, "the signature takes [-1]"),
    ({"inputs": {"text_a": [1], "text_b": ["c"]}}, 400, "must hold string values"),
    ({"signature_name": "nope", "instances": []}, 400, "no signature 'nope'"),
    ({"instances": [{"text_a": "a" * 50000, "text_b": "b"}]}, 413, "--max_body_bytes=40000"),
    ({"signature_name": "encoded", "inputs": {"token_ids": [[2, 10 ** 6]],
      "segment_ids": [[0, 0]], "padding_mask": [[1, 1]]}}, 400, "token_ids must hold values"),
    ({"signature_name": "encoded", "inputs": {"token_ids": [[2, 1.5]],
      "segment_ids": [[0, 0]], "padding_mask": [[1, 1]]}}, 400, "not an integer"),
    # Negative ids and segments, masks other than 0/1: refused, not wrapped around.
    ({"signature_name": "encoded", "inputs": {"token_ids": [[2, -5]],
      "segment_ids": [[0, 0]], "padding_mask": [[1, 1]]}}, 400, "token_ids must hold values"),
    ({"signature_name": "encoded", "inputs": {"token_ids": [[2, 5]],
      "segment_ids": [[0, -1]], "padding_mask": [[1, 1]]}}, 400, "segment_ids must hold"),
    ({"signature_name": "encoded", "inputs": {"token_ids": [[2, 5]],
      "segment_ids": [[0, 2]], "padding_mask": [[1, 1]]}}, 400, "segment_ids must hold"),
    ({"signature_name": "encoded", "inputs": {"token_ids": [[2, 5]],
      "segment_ids": [[0, 0]], "padding_mask": [[1, 7]]}}, 400, "padding_mask must hold"),
    ({"signature_name": "encoded", "inputs": {"token_ids": [[2, 5]],
      "segment_ids": [[0, 0]], "padding_mask": [[-3, 1]]}}, 400, "padding_mask must hold"),
])
def test_mistakes_get_a_4xx_with_one_line_saying_what(served, body, status, says):
    server, _ = served
    got, answer = server.predict(body)
    assert (got, says in answer["error"], answer["error"].count("\n")) == (status, True, 0), answer


def test_metrics_count_requests_by_code_and_batch_rows(served):
    server, _ = served
    assert server.predict({"instances": [{"text_a": "a", "text_b": "b"}] * 3})[0] == 200
    status, text = server.get("/metrics")
    assert status == 200
    lines = dict(line.rsplit(" ", 1) for line in text.splitlines() if not line.startswith("#"))
    assert float(lines['albert_tf_serve_requests_total{code="200"}']) >= 3
    assert float(lines['albert_tf_serve_requests_total{code="400"}']) >= 10
    assert float(lines['albert_tf_serve_requests_total{code="413"}']) >= 1
    assert float(lines["albert_tf_serve_batch_rows_count"]) >= 3
    assert float(lines['albert_tf_serve_batch_rows_bucket{le="2.0"}']) < \
        float(lines['albert_tf_serve_batch_rows_bucket{le="4.0"}'])  # the 3-row request
    assert "albert_tf_serve_request_seconds_bucket" in text
    assert float(lines["albert_tf_serve_model_version"]) == 1


def test_a_new_version_is_served_without_a_restart(served):
    server, version_dir = served
    # A folder whose name str.isdigit takes but int() refuses, and a plain file:
    # skipped (logged once), and the watcher goes on to version 2.
    os.makedirs(os.path.join(server.root, "\u00b2"))
    with open(os.path.join(server.root, "\u00b2", "saved_model.pb"), "wb") as f:
        f.write(b"x")
    open(os.path.join(server.root, "notes.txt"), "w").close()
    # As `albert-tf export` writes one: complete in a hidden folder, then renamed.
    shutil.copytree(version_dir, os.path.join(server.root, ".2.tmp"))
    os.rename(os.path.join(server.root, ".2.tmp"), os.path.join(server.root, "2"))
    deadline = time.monotonic() + 120
    while server.get("/v1/models/rte")[1]["model_version_status"][0]["version"] != "2":
        assert time.monotonic() < deadline, "version 2 was not loaded within 120 s"
        time.sleep(0.3)
    assert server.get("/v1/models/rte/metadata")[1]["model_spec"]["version"] == "2"
    body = {"instances": [{"text_a": "a", "text_b": "b"}]}
    assert server.predict(body, version=2)[0] == 200
    assert server.predict(body, version=1)[0] == 404


# A server under load stopped by SIGTERM (~12 s of CPU).
@pytest.mark.slow
def test_sigterm_answers_every_accepted_request_and_exits_0(served):
    server, _ = served
    body = {"instances": [{"text_a": "x " * 300, "text_b": t} for t in HOSTILE] + [
        {"text_a": "a", "text_b": "b"}] * 2}
    answers, sent = [None] * 12, threading.Semaphore(0)

    def client(i):
        import http.client
        import json

        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        connection.request("POST", "/v1/models/rte:predict", json.dumps(body))
        sent.release()
        response = connection.getresponse()
        answers[i] = (response.status, len(json.loads(response.read())["predictions"]))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for _ in threads:
        sent.acquire()
    time.sleep(0.5)  # every connection accepted by the server's event loop
    start = time.monotonic()
    server.process.terminate()
    time.sleep(0.3)
    with pytest.raises(OSError):  # no new connection once SIGTERM arrived
        server.predict(body)
    for t in threads:
        t.join(60)
    returncode = server.process.wait(40)
    assert answers == [(200, 10)] * 12
    assert returncode == 0 and time.monotonic() - start < 30
