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
from kserve.errors import InvalidInput

from albert_tf.serving import metrics, rest
from albert_tf.serving.batching import Batcher
from albert_tf.serving.versions import LoadedVersion, newest

log = logging.getLogger("albert_tf.serve")


class TooManyRows(ValueError):
    """A request whose model rows exceed --max_rows_per_request (the server answers 413)."""


def model_rows(arrays):
    """The sequences the model runs for a request, before the windows of long texts
    (which the export bounds per text): its rows times the items of a row's list
    input (a multiple-choice question's choices, a CHID passage's candidates); for
    an input of token ids, its rows."""
    return max(int(a.size) if a.dtype == object else int(a.shape[0]) if a.ndim else 1
               for a in arrays.values())


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

    async def _answer(self, future, timeout):
        """`future`'s outputs; `ShuttingDown` once `closing` is set first."""
        if self.closing is None:
            return await asyncio.wait_for(future, timeout)
        closing = asyncio.ensure_future(self.closing.wait())
        try:
            done, _ = await asyncio.wait({future, closing}, timeout=timeout,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            closing.cancel()
        if future in done:
            return future.result()
        future.cancel()
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
        sequences = model_rows(request.arrays)
        if sequences > self.settings.max_rows_per_request:
            raise TooManyRows(f"the request asks for {sequences} model rows ({request.rows} "
                              f"row(s) x their lists of items), over --max_rows_per_request="
                              f"{self.settings.max_rows_per_request}; split it")
        if request.rows > self.settings.max_batch_size:
            raise InvalidInput(f"the request has {request.rows} rows, over --max_batch_size="
                               f"{self.settings.max_batch_size}; split it")
        signature = served.signatures[request.signature_name]
        key = (served.version, request.signature_name) if signature.batchable else None
        future = self.batcher.submit(key, lambda arrays: call(signature, arrays),
                                     request.arrays, request.rows)
        metrics.QUEUED.set(self.batcher.queued)
        timeout = self.settings.request_timeout_s - (time.monotonic() - arrived)
        try:
            outputs = await self._answer(future, timeout)
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
        raise rest.BadRequest(graph_message(e.message)) from None
    return {n: t.numpy() for n, t in outputs.items()}


def graph_message(message):
    """The op's own words in a graph execution error, on one line (without the
    node names and stack lines TensorFlow wraps them in)."""
    noise = ("Graph execution error:", "Detected at node", "<stack traces unavailable>", "File ")
    lines = [line.split(" [Op:")[0].strip() for line in message.splitlines()
             if line.strip() and not line[:1].isspace() and not line.startswith(noise)]
    return "; ".join(lines) or message.strip().splitlines()[0]
