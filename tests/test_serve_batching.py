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


def _answers(max_batch_size, submit):
    """`(calls, answers)`: the rows of each call a started batcher made, and the
    outputs of the futures `submit(batcher, call)` returned."""
    async def main():
        calls = []
        batcher = Batcher(max_batch_size=max_batch_size, batch_timeout_ms=50, max_queue_size=10)
        batcher.start()
        answers = await asyncio.gather(*submit(batcher, _doubling(calls)))
        await batcher.stop()
        return calls, [a["y"].tolist() for a in answers]
    return _run(main())


def test_requests_waiting_together_share_a_call_and_get_their_own_rows():
    def submit(batcher, call):
        return [*(batcher.submit("k", call, {"x": np.arange(i, i + n)}, n)
                  for i, n in ((0, 1), (10, 3), (20, 2))),
                batcher.submit(None, call, {"x": np.array([7])}, 1)]

    calls, answers = _answers(8, submit)
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
        with pytest.raises(QueueFull, match="2 calls wait for the model and this request needs 1"):
            batcher.submit("k", call, {"x": np.array([3])}, 1)

    _run(main())


def test_a_request_given_up_on_runs_no_more_of_its_parts():
    """A 504 frees the server: the parts of a request still queued at its deadline
    never reach the model (the part already running ends)."""
    from albert_tf.serving.model import ExportModel
    from albert_tf.serving.settings import ServeSettings

    async def main():
        calls = []
        batcher = Batcher(max_batch_size=2, batch_timeout_ms=0, max_queue_size=10)
        batcher.start()
        model = ExportModel("m", "root", None, ServeSettings(model="root"))
        futures = batcher.submit_parts(None, _doubling(calls, seconds=0.3),
                                       [({"x": np.array([i, i])}, 2, 2) for i in range(4)])
        with pytest.raises(asyncio.TimeoutError):
            await model._answer(futures, timeout=0.1)
        await asyncio.sleep(0.8)
        await batcher.stop()
        return calls, [f.cancelled() for f in futures]

    calls, cancelled = _run(main())
    assert calls == [2] and cancelled == [True] * 4


def test_parts_of_one_request_share_calls_with_others_up_to_the_batch():
    def submit(batcher, call):
        return [*batcher.submit_parts("k", call, [({"x": np.arange(3)}, 3, 3),
                                                  ({"x": np.arange(3, 5)}, 2, 2)]),
                batcher.submit("k", call, {"x": np.array([9])}, 1)]

    calls, answers = _answers(4, submit)
    assert calls == [4, 2] and answers == [[0, 2, 4], [6, 8], [18]]


def test_parts_that_do_not_fit_in_the_queue_are_refused_together():
    async def main():
        batcher = Batcher(max_batch_size=1, batch_timeout_ms=0, max_queue_size=3)
        call = _doubling([])
        batcher.submit("k", call, {"x": np.array([1])}, 1)
        with pytest.raises(QueueFull):
            batcher.submit_parts("k", call, [({"x": np.array([i])}, 1, 1) for i in range(3)])
        return batcher.queued

    assert _run(main()) == 1
