"""`Progress`: a bar with rate and ETA on a terminal or in a notebook, a line now and then in a log.

For the steps of a command that take a while: training, evaluation, pretraining data,
featurization. On a terminal it is a tqdm bar; in a Jupyter notebook (a
command run through `albert_tf.api`) the notebook's own bar (`tqdm.auto`: a
widget where ipywidgets is installed, else tqdm's text bar); when the stream is
not a terminal (a batch job) it prints one line every `interval` seconds and
one at the end, so that logs stay readable. `Heartbeat`
is for work that cannot count its units (a task's featurization, tracing the
first training step): a line every `interval` seconds while it runs.
"""

import sys
import threading
import time


def _duration(seconds):
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def in_notebook():
    """Whether this process is a Jupyter kernel (IPython already imported by it)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def notebook_bar(total, what, unit, initial=0):
    """A `tqdm.auto` bar for a notebook (`in_notebook()`), or None elsewhere."""
    if not in_notebook():
        return None
    import warnings

    with warnings.catch_warnings():  # without ipywidgets: tqdm's text bar, said once here
        warnings.simplefilter("ignore")
        from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=what, unit=f" {unit}", leave=True)


class Progress:
    """Progress of `total` units of work called `what` (e.g. "evaluate dev", "examples").

    Args:
        total: the number of units, or None when unknown (no ETA then).
        stream: where to write (default `sys.stderr`).
        interval: seconds between lines when `stream` is not a terminal.
        enabled: False makes every call a no-op.
    """

    def __init__(self, total, what, unit="it", stream=None, interval=30.0, enabled=True):
        self.total, self.what, self.unit = total, what, unit
        self.stream = stream or sys.stderr
        self.interval, self.enabled = interval, enabled
        self.done, self._printed = 0, None  # `done` when a line was last printed
        self.start = self._last = time.monotonic()
        self._bar = notebook_bar(total, what, unit) if enabled else None
        if enabled and self._bar is None and getattr(self.stream, "isatty", lambda: False)():
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=what, unit=f" {unit}", file=self.stream,
                             dynamic_ncols=True, leave=False)

    def line(self, now=None):
        """`what: done/total unit, rate/s, ETA m:ss` (elapsed time at the end); under
        0.1 a second, the rate is the time each unit took ("4:10 each")."""
        now = time.monotonic() if now is None else now
        rate = self.done / max(now - self.start, 1e-9)
        count = f"{self.done:,}/{self.total:,}" if self.total else f"{self.done:,}"
        text = f"{self.what}: {count} {self.unit}"
        if self.done:
            # Slow units (a run each) by their time: "0.0/s" would say nothing.
            text += f", {rate:.1f}/s" if rate >= 0.1 else f", {_duration(1 / rate)} each"
        if self.total and self.done < self.total and rate > 0:
            text += f", ETA {_duration((self.total - self.done) / rate)}"
        elif self.total and self.done >= self.total:
            text += f", {_duration(now - self.start)}"
        return text

    def update(self, increment=1):
        if not self.enabled:
            return
        self.done += increment
        if self._bar is not None:
            self._bar.update(increment)
            return
        now = time.monotonic()
        if now - self._last >= self.interval:
            self._last, self._printed = now, self.done
            print(self.line(now), file=self.stream, flush=True)

    def close(self):
        """Prints the final line, unless the last update printed it already."""
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.close()
        elif self._printed == self.done == self.total:
            return
        print(self.line(), file=self.stream, flush=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.close()
        elif self._bar is not None:
            self._bar.close()


class Heartbeat:
    """While running (between `start` and `stop`, or as a context manager), prints
    `{what}: {doing}, m:ss so far` every `interval` seconds from a background thread:
    long work that reports no progress of its own still shows it is alive.

    Args:
        what, doing: the line's words (e.g. "featurize train", "tokenizing").
        stream: where to write (default `sys.stderr`); enabled: False does nothing.
    """

    def __init__(self, what, doing="running", stream=None, interval=30.0, enabled=True):
        self.what, self.doing = what, doing
        self.stream, self.interval, self.enabled = stream, interval, enabled
        self._stopped = threading.Event()
        self._thread = None

    def _beat(self, start):
        while not self._stopped.wait(self.interval):
            print(f"{self.what}: {self.doing}, {_duration(time.monotonic() - start)} so far",
                  file=self.stream or sys.stderr, flush=True)

    def start(self):
        if self.enabled and self._thread is None:
            self._thread = threading.Thread(target=self._beat, args=(time.monotonic(),),
                                            name=f"heartbeat {self.what}", daemon=True)
            self._thread.start()
        return self

    def stop(self):
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
