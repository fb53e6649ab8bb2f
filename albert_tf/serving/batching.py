"""Server-side batching: requests that wait together run as one call of the model.

One worker takes the oldest waiting request and adds every other waiting
request of the same signature (and version) while the batch has room
(`max_batch_size` sequences of the model: a request part's `cost`), waiting
up to `batch_timeout_ms` for more when it is not full; it then calls the
signature once, in a thread (TensorFlow releases the GIL, so the event loop
keeps reading requests meanwhile), and
gives each request its own rows of the outputs. (The wait starts when the
worker takes the oldest request, not when it arrived: with few clients, each
sending its next request once answered, a request that waited through the
previous call would otherwise run at once in a small batch, and a tiny
model's calls cost more per row the smaller they are.) Signatures whose rows do not
line up across requests (`versions.Signature.batchable`) run one request a
call, through the same queue.

A request of many sequences is submitted as consecutive parts of at most
`max_batch_size` sequences each (`submit_parts`), so that no call of the model
runs more than one batch's worth and a request given up on (its deadline
passed) loses only the part already running: its parts still queued are
dropped, never run. The queue is bounded: submitting raises `QueueFull` at
once when the parts would take it past `max_queue_size`.
"""

import asyncio
import collections
import concurrent.futures
import time

import numpy as np


class QueueFull(RuntimeError):
    """Too many requests wait for the model (the server answers 503)."""


class _Waiting:
    def __init__(self, key, call, arrays, rows, cost, future):
        self.key, self.call, self.arrays, self.rows = key, call, arrays, rows
        self.cost, self.future = cost, future


class Batcher:
    """`await batcher.submit(key, call, arrays, rows)` -> that request's outputs.

    key: requests of one key may share a call (None: never shared); call:
    `{name: array} -> {name: array}`, the signature on numpy arrays; rows: the
    arrays' first dimension; cost: the sequences the model runs for them
    (default: rows); on_batch(cost): told the sequences of every call made
    (for the metrics).
    """

    def __init__(self, max_batch_size, batch_timeout_ms, max_queue_size, on_batch=None):
        self.max_batch_size, self.max_queue_size = max_batch_size, max_queue_size
        self.timeout = batch_timeout_ms / 1000
        self.on_batch = on_batch or (lambda rows: None)
        self._waiting = collections.deque()
        self._wake = None  # the worker's future while it waits for requests
        self._executor = concurrent.futures.ThreadPoolExecutor(1, "model")
        self._worker = None

    @property
    def queued(self):
        return len(self._waiting)

    def start(self):
        self._worker = asyncio.get_running_loop().create_task(self._run())

    async def stop(self):
        """Ends the worker once the queue is empty (every accepted request answered)."""
        while any(not w.future.done() for w in self._waiting):
            await asyncio.sleep(0.01)
        self._worker.cancel()
        self._executor.shutdown(wait=False)

    def submit(self, key, call, arrays, rows, cost=None):
        """A future of the request's outputs; raises QueueFull when the queue is full."""
        return self.submit_parts(key, call, [(arrays, rows, rows if cost is None else cost)])[0]

    def submit_parts(self, key, call, parts):
        """Futures of the outputs of each of one request's `parts` (`(arrays, rows,
        cost)`, run in their order, each in one call); all queued or, when they do
        not fit in the queue, none (QueueFull)."""
        if len(self._waiting) + len(parts) > self.max_queue_size:
            raise QueueFull(f"server busy: {len(self._waiting)} calls wait for the model and "
                            f"this request needs {len(parts)} (--max_queue_size="
                            f"{self.max_queue_size}); retry later")
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in parts]
        self._waiting.extend(_Waiting(key, call, arrays, rows, cost, future)
                             for (arrays, rows, cost), future in zip(parts, futures))
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)
        return futures

    async def _arrival(self, timeout=None):
        """Returns when a request is submitted, or after `timeout` seconds (None: never)."""
        loop = asyncio.get_running_loop()
        self._wake = loop.create_future()
        timer = None if timeout is None else loop.call_later(
            timeout, lambda wake: wake.done() or wake.set_result(None), self._wake)
        try:
            await self._wake
        finally:
            self._wake = None
            if timer is not None:
                timer.cancel()

    async def _run(self):
        loop = asyncio.get_running_loop()
        while True:
            batch = await self._next_batch()
            if not batch:
                continue
            arrays = {n: np.concatenate([w.arrays[n] for w in batch]) for n in batch[0].arrays}
            self.on_batch(sum(w.cost for w in batch))
            try:
                outputs = await loop.run_in_executor(self._executor, batch[0].call, arrays)
            except Exception as e:  # noqa: BLE001 - each request of the batch gets the error
                for w in batch:
                    if not w.future.done():
                        w.future.set_exception(e)
                continue
            start = 0
            for w in batch:
                if not w.future.done():
                    w.future.set_result({n: a[start:start + w.rows] for n, a in outputs.items()})
                start += w.rows

    async def _next_batch(self):
        """The oldest live request and the live ones of its key that fit beside it."""
        while not self._live_head():
            await self._arrival()
        first = self._waiting.popleft()
        batch, cost = [first], first.cost
        if first.key is None:
            return batch
        deadline = time.monotonic() + self.timeout
        while True:
            for w in list(self._waiting):
                if w.key == first.key and cost + w.cost <= self.max_batch_size:
                    self._waiting.remove(w)
                    if not w.future.done():
                        batch.append(w)
                        cost += w.cost
            left = deadline - time.monotonic()
            if cost >= self.max_batch_size or left <= 0:
                return batch
            await self._arrival(left)

    def _live_head(self):
        """Drops the requests given up on (their deadline passed) from the front."""
        while self._waiting and self._waiting[0].future.done():
            self._waiting.popleft()
        return bool(self._waiting)
