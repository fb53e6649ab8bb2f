"""The ASGI layer in front of the application: the body limit and the request metrics.

A body over `max_body_bytes` is refused with 413 before it is parsed (at once
when its Content-Length says so, else as soon as that many bytes arrived);
every predict request is counted by status code and timed.
"""

import json
import time

from albert_tf.serving import metrics


async def reply(send, status, message):
    """An error answer in TF Serving's form, `{"error": "..."}`."""
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class Limits:
    def __init__(self, app, max_body_bytes):
        self.app, self.max_body_bytes = app, max_body_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start, status = time.perf_counter(), [500]

        async def sending(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            body = await self._body(scope, receive)
            if body is None:
                await reply(sending, 413, f"request body over --max_body_bytes="
                                          f"{self.max_body_bytes} bytes")
                return
            replayed = False

            async def replay():
                nonlocal replayed
                if replayed:
                    return await receive()
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}

            await self.app(scope, replay, sending)
        finally:
            if scope["path"].endswith(":predict"):
                metrics.REQUESTS.labels(code=str(status[0])).inc()
                metrics.LATENCY.observe(time.perf_counter() - start)

    async def _body(self, scope, receive):
        """The whole body, or None when it is over the limit."""
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            return None
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_body_bytes:
                return None
            if not message.get("more_body"):
                break
        return b"".join(chunks)
