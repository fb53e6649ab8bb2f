"""The ASGI layer in front of the application: the body limits and the request metrics.

A body over `max_body_bytes` is refused with 413 before it is parsed; the rest
of it is still read and dropped (up to `DRAIN_BYTES`), so that a client that
writes its whole body before reading (Python's urllib) reads the 413 instead
of a reset connection. Headers over `max_header_bytes` get 431. A body not received within `client_timeout_s` gets
408; one nested deeper than `MAX_DEPTH` gets 400 before any decoder sees it
(whatever its Content-Type). A request still running when the shutdown's
grace period ends gets a JSON 503. Every predict request is counted by status
code and timed.
"""

import asyncio
import json
import re
import time

import numpy as np

from albert_tf.serving import connections, metrics

MAX_DEPTH = 32  # the inputs' ranks (at most 3) and their objects need far fewer
DRAIN_BYTES = 64 * 1024 * 1024
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)


async def reply(send, status, message, headers=()):
    """An error answer in TF Serving's form, `{"error": "..."}`."""
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


def nesting_depth(body):
    """The deepest nesting of `[` and `{` in a JSON text, strings left out; a text
    with more closing than opening brackets counts as deep (it is not JSON)."""
    skeleton = np.frombuffer(_STRINGS.sub(b'""', body), np.uint8)
    steps = (np.isin(skeleton, (ord("["), ord("{"))).astype(np.int32)
             - np.isin(skeleton, (ord("]"), ord("}"))))
    if not steps.size:
        return 0
    depth = np.cumsum(steps)
    return MAX_DEPTH + 1 if depth.min() < 0 else int(depth.max())


class TooLarge(Exception):
    pass


class Limits:
    def __init__(self, app, max_body_bytes, client_timeout_s=10.0, max_header_bytes=16384):
        self.app, self.max_body_bytes = app, max_body_bytes
        self.client_timeout_s, self.max_header_bytes = client_timeout_s, max_header_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start, status = time.perf_counter(), [None]

        async def sending(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                if status[0] >= 400:  # counted, and logged once per interval
                    connections.REFUSALS.add(f"{status[0]} answers")
            await send(message)

        try:
            await self._handle(scope, receive, sending)
        except asyncio.CancelledError:
            if status[0] is None:  # the shutdown's grace period ran out
                status[0] = 503
                await asyncio.shield(reply(sending, 503, "the server is shutting down; "
                                                         "retry on another replica"))
            raise
        finally:
            if scope["path"].endswith(":predict"):
                metrics.REQUESTS.labels(code=str(status[0] or 500)).inc()
                metrics.LATENCY.observe(time.perf_counter() - start)

    async def _handle(self, scope, receive, send):
        # h11 bounds the headers it waits for (--max_header_bytes), but parses any size
        # that arrives in one read (up to 256 KiB): the same bound on what it parsed.
        size = sum(len(k) + len(v) + 4 for k, v in scope["headers"])
        if size > self.max_header_bytes:
            return await reply(send, 431, f"request headers of {size} bytes, over "
                                          f"--max_header_bytes={self.max_header_bytes}",
                               [(b"connection", b"close")])
        try:
            body = await asyncio.wait_for(self._body(scope, receive), self.client_timeout_s)
        except asyncio.TimeoutError:
            return await reply(send, 408, f"the request body did not arrive within "
                                          f"--client_timeout_s={self.client_timeout_s:g}",
                               [(b"connection", b"close")])
        except TooLarge:
            return await reply(send, 413, f"request body over --max_body_bytes="
                                          f"{self.max_body_bytes} bytes")
        if body and nesting_depth(body) > MAX_DEPTH:
            return await reply(send, 400, f"the body nests lists or objects deeper than "
                                          f"{MAX_DEPTH} levels (or is not JSON)")
        replayed = False

        async def replay():
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _body(self, scope, receive):
        """The whole body; `TooLarge` when it is over the limit, once the rest
        (up to `DRAIN_BYTES`) has been read and dropped."""
        chunks, size, over = [], 0, False
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            over = True
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            over = over or size > self.max_body_bytes
            if not over:
                chunks.append(message.get("body", b""))
            if not message.get("more_body") or size > DRAIN_BYTES:
                break
        if over:
            raise TooLarge()
        return b"".join(chunks)
