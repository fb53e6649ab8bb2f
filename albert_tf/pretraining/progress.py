"""Progress of a long data run: a tqdm bar on a terminal, else a line now and then."""

import sys
import time


class Progress:
    """Reports documents processed (and their rate) and instances made.

    Args:
        stream: where to write (default `sys.stderr`).
        interval: seconds between lines when `stream` is not a terminal (logs
            of batch jobs would drown in a bar's carriage returns).
        bar: force the tqdm bar on (True) or off (False); None: on for a terminal.
    """

    def __init__(self, stream=None, interval=30.0, bar=None):
        self.stream = stream or sys.stderr
        self.interval = interval
        self.start = self._last = time.monotonic()
        self.documents = self.instances = 0
        self._bar = None
        if bar is None:
            bar = hasattr(self.stream, "isatty") and self.stream.isatty()
        if bar:
            try:
                from tqdm import tqdm  # optional: a dependency of huggingface_hub
                self._bar = tqdm(file=self.stream, unit=" docs", dynamic_ncols=True)
            except ImportError:
                pass

    def update(self, documents, instances):
        """The totals so far (not increments)."""
        if self._bar is not None:
            self._bar.update(documents - self.documents)
            self._bar.set_postfix(instances=f"{instances:,}", refresh=False)
        self.documents, self.instances = documents, instances
        now = time.monotonic()
        if self._bar is None and now - self._last >= self.interval:
            self._last = now
            self._line(now)

    def _line(self, now):
        elapsed = max(now - self.start, 1e-9)
        print(f"{self.documents:,} documents ({self.documents / elapsed:.1f}/s), "
              f"{self.instances:,} instances ({self.instances / elapsed:.0f}/s)",
              file=self.stream, flush=True)

    def close(self):
        if self._bar is not None:
            self._bar.close()
        else:
            self._line(time.monotonic())
