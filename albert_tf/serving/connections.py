"""The connections a server keeps: uvicorn's h11 protocol with two deadlines and a cap.

uvicorn bounds the header size (`h11_max_incomplete_event_size`), the idle time
between requests (`timeout_keep_alive`) and the requests in progress
(`limit_concurrency`), but has no deadline for a request's headers and no cap
on open connections: a client sending a byte every few seconds, or thousands
of idle sockets, would hold a file descriptor each for good. Here:

- a connection must deliver a request's headers within `client_timeout_s` of
  opening or of its last answer, else it is closed;
- past `max_connections`, the connection idle the longest (no request in
  progress) is closed to make room, or the new one when none is idle.

Each refusal is counted and logged once per `Refusals.interval_s`, not per socket.
"""

import logging
import time

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("albert_tf.serve")


class Refusals:
    """Counts refusals by kind and logs their counts at most once per interval."""

    interval_s = 10.0

    def __init__(self):
        self.counts, self.logged_at = {}, None

    def add(self, kind):
        self.counts[kind] = self.counts.get(kind, 0) + 1
        now = time.monotonic()
        if self.logged_at is None or now - self.logged_at >= self.interval_s:
            log.warning("refused since the last report: %s",
                        ", ".join(f"{n} {k}" for k, n in sorted(self.counts.items())))
            self.counts, self.logged_at = {}, now


REFUSALS = Refusals()


def protocol(client_timeout_s, max_connections):
    """An h11 protocol class with the header deadline and the connection cap."""

    class Protocol(H11Protocol):
        def connection_made(self, transport):
            super().connection_made(transport)
            self._idle_since, self._deadline = time.monotonic(), None
            self._arm()
            if len(self.connections) > max_connections:
                self._make_room()

        def _arm(self):
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline = self.loop.call_later(client_timeout_s, self._expire)

        def _waiting(self):
            """No request in progress: the headers of the next one not all here."""
            return self.conn.their_state is h11.IDLE and (
                self.cycle is None or self.cycle.response_complete)

        def _expire(self):
            if self._waiting() and not self.transport.is_closing():
                REFUSALS.add("connections without a request within --client_timeout_s")
                self.transport.close()

        def _make_room(self):
            idle = [c for c in self.connections if c is not self and c._waiting()]
            oldest = min(idle, key=lambda c: c._idle_since) if idle else self
            REFUSALS.add("connections over --max_connections closed")
            oldest.transport.close()
            self.connections.discard(oldest)  # counted out now, not when the loop gets to it

        def on_response_complete(self):
            super().on_response_complete()
            self._idle_since = time.monotonic()
            self._arm()

        def connection_lost(self, exc):
            if self._deadline is not None:
                self._deadline.cancel()
            super().connection_lost(exc)

    return Protocol


class RefusalLog(logging.Filter):
    """uvicorn's line for each request over `limit_concurrency`, and for each
    malformed or oversized header, counted into `REFUSALS` instead."""

    QUIET = {"Exceeded concurrency limit.": "requests over the concurrency limit (503)",
             "Invalid HTTP request received.": "malformed or oversized requests (400)"}

    def filter(self, record):
        kind = self.QUIET.get(record.getMessage())
        if kind is None:
            return True
        REFUSALS.add(kind)
        return False
