"""The export as a KServe model: predict requests through the batcher, new versions
picked up while serving.

`ExportModel.predict` gets KServe's decoded V1 body (TF Serving's REST predict
body), parses it against the signature asked for (`rest.parse`: 400 on a
mistake), queues it (`batching.Batcher`: 503 when full), waits until its
deadline (504 after) and answers in TF Serving's form. A signature's own
refusal of its inputs (an `InvalidArgumentError` from the graph) is a 400
with the signature's message.
"""

import asyncio
import gc
import json
import logging
import time

import kserve
import numpy as np
from kserve.errors import InvalidInput

from albert_tf.errors import op_message
from albert_tf.serving import metrics, rest
from albert_tf.serving.batching import Batcher
from albert_tf.serving.versions import LoadedVersion, newest

log = logging.getLogger("albert_tf.serve")


class TooManyRows(ValueError):
    """A request whose model rows exceed --max_rows_per_request (the server answers 413)."""


def row_costs(arrays, windows=None):
    """The sequences the model runs for each row of a request (int64 `(rows,)`):
    the items of a row's list input (a multiple-choice question's choices, a CHID
    passage's candidates), times, for an export that reads long texts in windows
    (`windows`: the export's `text_windows()`), the windows its texts can take.

    A text of n characters is counted as n + 1 tokens, at most the export's
    `max_tokens`: a token spells at least one character, but for a word-initial
    "▁" of its own (NFKC expansions such as "ﬁ" aside, which the export's cut of
    each text at `max_tokens` tokens bounds)."""
    rows = next(iter(arrays.values())).shape[0]
    cost = np.ones(rows, np.int64)
    for a in arrays.values():
        if a.dtype == object and a.ndim > 1:
            cost *= int(np.prod(a.shape[1:]))
    if windows:
        tokens = np.zeros(rows, np.int64)
        for name in windows["inputs"]:
            if name in arrays and arrays[name].dtype == object and arrays[name].ndim == 1:
                tokens += [len(t.decode("utf-8", "replace")) + 1 for t in arrays[name]]
        tokens = np.minimum(tokens, windows["max_tokens"])
        room, step = windows["room"], windows["step"]
        cost *= 1 + -(-np.maximum(tokens - room, 0) // step)
    return cost


def parts(costs, most):
    """`[(start, stop)]`: consecutive runs of rows of at most `most` sequences
    each (a row of more is a part alone)."""
    found, start, total = [], 0, 0
    for i, cost in enumerate(costs):
        if i > start and total + cost > most:
            found.append((start, i))
            start, total = i, 0
        total += cost
    return found + [(start, len(costs))]


class ShuttingDown(RuntimeError):
    """A request still waiting when the shutdown's grace period is about to end
    (the server answers 503)."""


class DeadlineExceeded(RuntimeError):
    """A request not answered within --request_timeout_s (the server answers 504)."""


class ExportModel(kserve.Model):
    def __init__(self, name, root, fixed, settings):
        super().__init__(name)
        self.root, self.fixed, self.settings = root, fixed, settings
        self.current, self._failed = None, set()
        self.batcher = None
        self.closing = None  # an asyncio.Event, set just before the grace period ends

    def load(self):
        version, folder = newest(self.root, self.fixed)
        self.current = LoadedVersion(version, folder, self.name)
        _freeze()
        metrics.VERSION.set(version)
        self.ready = True
        return self.ready

    def start_batching(self):
        self.batcher = Batcher(self.settings.max_batch_size, self.settings.batch_timeout_ms,
                               self.settings.max_queue_size, metrics.BATCH_ROWS.observe)
        self.batcher.start()

    async def watch(self):
        """Loads each newer version that appears under the root, then serves it; an
        error of any kind is logged and the next poll comes as planned."""
        while self.fixed is None:
            await asyncio.sleep(self.settings.poll_s)
            try:
                await self._poll()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the watcher outlives any one poll
                log.exception("checking %s for a new version failed; still serving version "
                              "%s", self.root, self.current.version)

    async def _poll(self):
        found = newest(self.root)
        if found is None or found[0] <= self.current.version or found[0] in self._failed:
            return
        try:
            loaded = await asyncio.get_running_loop().run_in_executor(
                None, LoadedVersion, *found, self.name)
        except Exception:  # noqa: BLE001 - a broken new version must not stop the server
            log.exception("version %s in %s does not load; still serving version %s",
                          found[0], found[1], self.current.version)
            self._failed.add(found[0])
            return
        self.current = loaded
        _freeze()
        metrics.VERSION.set(loaded.version)
        log.warning("serving version %s (%s)", loaded.version, loaded.folder)

    async def _answer(self, futures, timeout):
        """The outputs of each of `futures` (a request's parts); `ShuttingDown` once
        `closing` is set first. A request given up on (its deadline passed, the
        shutdown, a part refused) cancels its parts, so the ones still queued
        never run."""
        every = asyncio.gather(*futures)
        closing = asyncio.ensure_future(self.closing.wait()) if self.closing else None
        try:
            done, _ = await asyncio.wait({every} | ({closing} if closing else set()),
                                         timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if closing is not None:
                closing.cancel()
        if every in done and not every.exception():
            return every.result()
        for future in futures:
            future.cancel()
        if every in done:
            raise every.exception()
        every.cancel()
        if closing in done:
            raise ShuttingDown("the server is shutting down; retry on another replica")
        raise asyncio.TimeoutError()

    async def predict(self, payload, headers=None):
        arrived = time.monotonic()
        served = self.current
        try:
            request = rest.parse(_decoded(payload), served.signatures)
        except rest.BadRequest as e:
            raise InvalidInput(str(e)) from None
        if request.rows == 0:
            raise InvalidInput("the request has no rows")
        signature = served.signatures[request.signature_name]
        costs = row_costs(request.arrays, signature.windows)
        if costs.sum() > self.settings.max_rows_per_request:
            raise TooManyRows(f"the request asks for {costs.sum()} model rows ({request.rows} "
                              f"row(s) x their lists of items or the windows of their texts), "
                              f"over --max_rows_per_request="
                              f"{self.settings.max_rows_per_request}; split it")
        key = (served.version, request.signature_name) if signature.batchable else None
        futures = self.batcher.submit_parts(
            key, lambda arrays: call(signature, arrays),
            [({n: a[start:stop] for n, a in request.arrays.items()}, stop - start,
              int(costs[start:stop].sum()))
             for start, stop in parts(costs, self.settings.max_batch_size)])
        metrics.QUEUED.set(self.batcher.queued)
        timeout = self.settings.request_timeout_s - (time.monotonic() - arrived)
        try:
            outputs = await self._answer(futures, timeout)
        except asyncio.TimeoutError:
            raise DeadlineExceeded(f"no answer within --request_timeout_s="
                                   f"{self.settings.request_timeout_s:g}") from None
        except rest.BadRequest as e:
            raise InvalidInput(str(e)) from None
        finally:
            metrics.QUEUED.set(self.batcher.queued)
        return rest.answer(request.form, outputs)


def _freeze():
    """Moves the objects alive now (a loaded SavedModel's many) out of the garbage
    collector's sight: a full collection would walk them all while requests wait."""
    gc.collect()
    gc.freeze()


def _decoded(payload):
    """KServe passes a body whose Content-Type is not JSON (curl's -d default) as bytes;
    TF Serving reads any body as JSON."""
    if isinstance(payload, (bytes, bytearray)):
        try:
            return json.loads(payload)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise InvalidInput(f"Unrecognized request format: {e}") from None
    return payload


def call(signature, arrays):
    """The signature on numpy arrays (in the batcher's thread); its refusal of the
    inputs raises `rest.BadRequest` with the graph's message."""
    import tensorflow as tf

    tensors = {n: tf.constant(a, signature.inputs[n][0]) for n, a in arrays.items()}
    try:
        outputs = signature.function(**tensors)
    except tf.errors.InvalidArgumentError as e:
        raise rest.BadRequest(op_message(e.message)) from None
    return {n: t.numpy() for n, t in outputs.items()}
