"""`albert-tf serve` in a subprocess on 127.0.0.1, and a client of its REST API."""

import http.client
import json
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
