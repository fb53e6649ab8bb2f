"""The server's batcher, in-process on numpy arrays (no model, no HTTP): requests that
wait together share one call, each gets its own rows back, a batch that is not full
waits `batch_timeout_ms` for more, the queue is bounded."""

import asyncio
import time

import numpy as np
import pytest

from albert_tf.serving.batching import Batcher, QueueFull


def _doubling(calls, seconds=0.0):
    def call(arrays):
        calls.append(len(arrays["x"]))
        time.sleep(seconds)  # the model's time, in the batcher's thread
        return {"y": arrays["x"] * 2}
    return call


def _run(coroutine):
    return asyncio.run(coroutine)


def test_requests_waiting_together_share_a_call_and_get_their_own_rows():
    async def main():
        calls = []
        batcher = Batcher(max_batch_size=8, batch_timeout_ms=50, max_queue_size=10)
        batcher.start()
        call = _doubling(calls)
        futures = [batcher.submit("k", call, {"x": np.arange(i, i + n)}, n)
                   for i, n in ((0, 1), (10, 3), (20, 2))]
        unshared = batcher.submit(None, call, {"x": np.array([7])}, 1)
        answers = await asyncio.gather(*futures, unshared)
        await batcher.stop()
        return calls, [a["y"].tolist() for a in answers]

    calls, answers = _run(main())
    assert calls == [6, 1]
    assert answers == [[0], [20, 22, 24], [40, 42], [14]]


def test_a_batch_is_cut_at_max_batch_size_rows():
    async def main():
        calls = []
        batcher = Batcher(max_batch_size=4, batch_timeout_ms=1000, max_queue_size=10)
        batcher.start()
        call = _doubling(calls)
        start = time.monotonic()
        futures = [batcher.submit("k", call, {"x": np.array([i, i])}, 2) for i in range(3)]
        await asyncio.gather(*futures)
        await batcher.stop()
        return calls, time.monotonic() - start

    calls, seconds = _run(main())
    # Two full-size requests run at once; the third waits for company up to the timeout.
    assert calls == [4, 2] and 0.9 < seconds < 5


def test_a_full_queue_refuses_at_once():
    async def main():
        batcher = Batcher(max_batch_size=1, batch_timeout_ms=0, max_queue_size=2)
        call = _doubling([])
        batcher.submit("k", call, {"x": np.array([1])}, 1)
        batcher.submit("k", call, {"x": np.array([2])}, 1)
        with pytest.raises(QueueFull, match="2 requests wait"):
            batcher.submit("k", call, {"x": np.array([3])}, 1)

    _run(main())
