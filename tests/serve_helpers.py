"""`albert-tf serve` in a subprocess on 127.0.0.1, and a client of its REST API."""

import http.client
import json
import os
import re
import socket
import time

import cli_helpers

# Texts a server must answer like any other (4xx never, 5xx never).
HOSTILE = ["", "   ", "😀" * 40, "x" * 2000, "\x00\x01\u200b\ufeff", "叶老桂认为，浙商银行在杭州。",
           "a\tb\nc", "Ünïcödé façade naïve"]
PAIRS = [("A man sleeps.", "He rests."), *zip(HOSTILE, reversed(HOSTILE))]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`python -m albert_tf.serve --model=root --port=<free> *flags`, started and
    waited for (its status answering) on entry."""

    def __init__(self, root, *flags, name="rte"):
        self.root, self.name, self.port = root, name, free_port()
        self.process = cli_helpers.start("albert_tf.serve", f"--model={root}",
                                         f"--model_name={name}", f"--port={self.port}", *flags)
        deadline = time.monotonic() + 120
        while True:
            try:
                if self.get(f"/v1/models/{name}")[0] == 200:
                    break
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise RuntimeError(f"the server did not start:\n{self.process.stdout.read()}")
            time.sleep(0.3)

    def request(self, method, path, body=None, headers=None, timeout=60):
        """`(status, decoded JSON answer)`; body: bytes, str or a JSON value."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            if body is not None and not isinstance(body, (bytes, str)):
                body = json.dumps(body)
            if isinstance(body, str):
                body = body.encode("utf-8")  # as curl sends it (http.client: latin-1)
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            raw = response.read()
            try:
                return response.status, json.loads(raw)
            except ValueError:
                return response.status, raw.decode("utf-8", "replace")
        finally:
            connection.close()

    def get(self, path):
        return self.request("GET", path)

    def predict(self, body, name=None, version=None):
        where = f"/versions/{version}" if version is not None else ""
        return self.request("POST", f"/v1/models/{name or self.name}{where}:predict", body)

    def stop(self, timeout=40):
        """SIGTERM; `(exit status, seconds to exit, output)`."""
        start = time.monotonic()
        self.process.terminate()
        output = self.process.communicate(timeout=timeout)[0]
        return self.process.returncode, time.monotonic() - start, output


# -- The requests the documentation shows -----------------------------------------

DOCUMENTS = ("SERVING.md", "README.md")
ANSWER_KEYS = ("model_version_status", "predictions", "outputs")


class Documented:
    """One `curl` of the documentation: `method`, `path`, `model` (NAME in the path),
    `body` (the JSON text or None), where it is (`document:line`), and `answer`: the
    JSON answer the documentation shows for it, or None."""

    def __init__(self, where, path, body):
        self.where, self.path, self.body, self.answer = where, path, body, None
        self.method = "POST" if body is not None else "GET"
        self.model = re.match(r"/v1/models/([^/:]+)", path).group(1)

    @property
    def kind(self):
        """The key of its answer: status, row format (predictions), columnar (outputs)."""
        if self.body is None:
            return "model_version_status" if self.path.count("/") == 3 else None
        return "predictions" if "instances" in json.loads(self.body) else "outputs"

    def __repr__(self):
        return f"{self.where} {self.method} {self.path}"


def _answers(block):
    """The JSON values of a ```json block, one after another (None: not JSON)."""
    decoder, values, i = json.JSONDecoder(), [], 0
    while i < len(block):
        if block[i].isspace():
            i += 1
            continue
        try:
            value, i = decoder.raw_decode(block, i)
        except ValueError:
            return None
        values.append(value)
    return values


def documented_requests(root):
    """Every `curl ... http://localhost:PORT/v1/models/...` of `DOCUMENTS` (under
    `root`), each with the answer shown for it: a JSON answer (status, `predictions`,
    `outputs`) in a ```json block is that of the first request of its kind before
    it in its `###` section that has none yet."""
    found = []
    for document in DOCUMENTS:
        with open(os.path.join(root, document), encoding="utf-8") as f:
            text = f.read()
        sections = re.split(r"(?m)^(?=#{1,3} )", text)
        offset = 0
        for section in sections:
            requests = []
            for match in re.finditer(r"```(\w*)\n(.*?)```", section, re.S):
                kind, block = match.groups()
                if kind in ("sh", "bash", ""):
                    for call in re.finditer(r"curl -s (?:-X POST )?http://localhost:\d+(/\S+?)"
                                            r"(?: -d '(.*?)')?\n", block, re.S):
                        line = text.count("\n", 0, offset + match.start(2) + call.start()) + 1
                        requests.append(Documented(f"{document}:{line}", *call.groups()))
                elif kind == "json":
                    for value in _answers(block) or ():
                        keys = [k for k in ANSWER_KEYS if isinstance(value, dict) and k in value]
                        waiting = [r for r in requests if r.answer is None and keys
                                   and r.kind == keys[0]]
                        if waiting:
                            waiting[0].answer = value
            found += requests
            offset += len(section)
    return found


def check_answer_form(shown, got, where):
    """`shown` (a documented answer) has the form of `got` (a served one): the same
    keys, lists of the same lengths, strings where strings, numbers where numbers."""
    if isinstance(got, dict):
        assert isinstance(shown, dict) and sorted(shown) == sorted(got), (where, shown, got)
        for key in got:
            check_answer_form(shown[key], got[key], f"{where}.{key}")
    elif isinstance(got, list):
        assert isinstance(shown, list) and len(shown) == len(got), (where, shown, got)
        for i, (s, g) in enumerate(zip(shown, got)):
            check_answer_form(s, g, f"{where}[{i}]")
    elif isinstance(got, str):
        assert isinstance(shown, str), (where, shown, got)
    else:
        assert isinstance(shown, (int, float)) and not isinstance(shown, (bool, str)) \
            and isinstance(got, (int, float)), (where, shown, got)


def check_request_against_metadata(body, signatures, where):
    """A documented predict body is valid for the served metadata: a signature the
    model has, exactly its inputs, each of the signature's rank and fixed sizes, of
    strings for string inputs."""
    request = json.loads(body)
    name = request.get("signature_name", "serving_default")
    assert name in signatures, (where, name, sorted(signatures))
    inputs = signatures[name]["inputs"]
    if "instances" in request:
        rows = request["instances"]
        assert isinstance(rows, list) and rows, where
        columns = {n: [row[n] for row in rows] for n in inputs}
        assert all(set(row) == set(inputs) for row in rows), (where, sorted(inputs))
    else:
        columns = request["inputs"]
        assert set(columns) == set(inputs), (where, sorted(columns), sorted(inputs))
    for n, column in columns.items():
        dims = [int(d["size"]) for d in inputs[n]["tensor_shape"]["dim"]]
        value, shape = column, []
        while isinstance(value, list):
            shape.append(len(value))
            value = value[0] if value else None
        assert len(shape) == len(dims) and all(d in (-1, s) for d, s in zip(dims, shape)), \
            (where, n, shape, dims)
        if inputs[n]["dtype"] == "DT_STRING":
            assert isinstance(value, str), (where, n, value)
    return name


def _check_shown_values(shown, body, info, where):
    """What a documented answer says agrees with itself, its request and the export:
    a label of the export's, at its label_id, the most probable; a choice at its
    index (an idiom at each blank's); an answer at its offsets into the context."""
    request = json.loads(body) if body else {}
    rows = request.get("instances") or ([request["inputs"]] if "inputs" in request else [])
    answers = shown.get("predictions") or [shown.get("outputs", {})]
    for row, answer in zip(rows, answers):
        if "label" in answer:
            labels = answer["label"] if isinstance(answer["label"], list) else [answer["label"]]
            ids = answer["label_id"] if isinstance(answer["label_id"], list) else \
                [answer["label_id"]]
            probabilities = answer["probabilities"]
            probabilities = probabilities if isinstance(probabilities[0], list) else \
                [probabilities]
            for label, i, p in zip(labels, ids, probabilities):
                assert info["labels"][i] == label, (where, label, info["labels"])
                assert max(range(len(p)), key=p.__getitem__) == i and \
                    abs(sum(p) - 1) < 2e-3, (where, p)
        if "choice" in answer:
            assert row["choices"][answer["choice_index"]] == answer["choice"], where
            assert all(p == 0 for p, c in zip(answer["probabilities"], row["choices"])
                       if not c) and abs(sum(answer["probabilities"]) - 1) < 2e-3, where
        if "idiom" in answer:
            assert answer["idiom"] == [row["candidates"][i] if i >= 0 else ""
                                       for i in answer["choice_index"]], where
        if "start" in answer:
            assert row["context"][answer["start"]:answer["end"]] == answer["answer"], where


def check_documented(server, requests, info):
    """Sends each documented request to `server`: every one answered 200; a predict
    body valid against the served metadata, answered with the signature's outputs;
    each answer shown has the served answer's form and says what the export can."""
    assert requests
    signatures = server.get(f"/v1/models/{server.name}/metadata")[1]["metadata"][
        "signature_def"]["signature_def"]
    for r in requests:
        status, got = server.request(r.method, r.path, r.body)
        assert status == 200, (r, got)
        if r.body is not None:
            name = check_request_against_metadata(r.body, signatures, r.where)
            outputs = sorted(signatures[name]["outputs"])
            served = got["predictions"][0] if "predictions" in got else got["outputs"]
            assert sorted(served) == outputs, (r, served)
        if r.answer is None:
            continue
        if r.kind == "model_version_status":
            assert r.answer == got, (r, got)
            continue
        check_answer_form(r.answer, got, r.where)
        _check_shown_values(r.answer, r.body, info, r.where)
