"""A trial's fine-tuning run as a process, followed through its evaluation history.

Each run of a trial is `python -m albert_tf.finetune` in a process of its own:
the search needs no hook in the training loop (it reads `eval_history.jsonl`,
which the run appends one JSON object per evaluation, `{"step", "epoch",
<metric>: value}`), a pruned run is stopped the way a user stops one (SIGTERM:
the run saves its step and exits), and every trial starts with the memory of
a fresh process, whatever the models before it held. The cost is the start of
one process per run (about 10 s of imports), small beside a run's training.
"""

import json
import os
import contextlib
import signal
import subprocess
import sys
import time

HISTORY_FILE = "eval_history.jsonl"


class HistoryReader:
    """The entries appended to an `eval_history.jsonl` since the last read.

    A line is read once it is whole (ends with a newline): the file is read
    while the run writes it.
    """

    def __init__(self, path):
        self.path, self.offset = path, 0

    def new_entries(self):
        if not os.path.isfile(self.path):
            return []
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        whole = data[:data.rfind(b"\n") + 1]
        self.offset += len(whole)
        entries = []
        for line in whole.decode("utf-8").splitlines():
            if line.strip():
                try:
                    entries.append(json.loads(line))
                except json.JSONDecodeError:
                    continue  # not an evaluation entry; the pruner reads the others
        return entries


def report_entries(entries, metric, trial, reported):
    """Reports each new entry's `metric` at its step to the Optuna `trial`; returns
    whether it should be pruned. `reported`: the steps reported before (a trial
    continued by a later start reads its history from the beginning again)."""
    for entry in entries:
        step, value = entry.get("step"), entry.get(metric)
        if isinstance(step, int) and isinstance(value, (int, float)) and step not in reported:
            trial.report(float(value), step)
            reported.add(step)
    return bool(reported) and trial.should_prune()


def watch(process, history_path, metric, trial, poll_seconds=2.0, reported=None):
    """Waits for `process` (a `subprocess.Popen`), reporting its history to
    `trial` (None: only waits); SIGTERM and True when the trial is pruned, else
    False once the process has ended."""
    reader, reported = HistoryReader(history_path), set(reported or ())
    try:
        return _watch(process, reader, metric, trial, poll_seconds, reported)
    finally:
        _CHILDREN.discard(process)


def _watch(process, reader, metric, trial, poll_seconds, reported):
    try:
        while True:
            ended = process.poll() is not None
            # A finished run's entries are reported too: later trials are compared with them.
            prune = trial is not None and report_entries(reader.new_entries(), metric, trial,
                                                         reported)
            if prune and not ended:
                process.send_signal(signal.SIGTERM)
                process.wait()
                return True
            if ended:
                return False
            time.sleep(poll_seconds)
    except KeyboardInterrupt:
        # Ctrl-C reached the run too (one process group): let it save its step first.
        process.wait()
        raise


_CHILDREN = set()  # the fine-tuning processes running


class Terminated(KeyboardInterrupt):
    """SIGTERM reached the search: handled as Ctrl-C is (each run saves its step and
    the trial stays RUNNING, for the next start to finish)."""


@contextlib.contextmanager
def stop_on_sigterm():
    """While inside: SIGTERM passes SIGTERM on to the running fine-tuning processes
    and raises `Terminated` (a `KeyboardInterrupt`), instead of killing the search
    with no word and no wait for its runs."""
    def handler(signum, frame):
        for process in list(_CHILDREN):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stop_with_parent():
    """In the child (Linux): SIGTERM when the search process dies, however it dies,
    so that a killed search leaves no run training on behind it (the run saves
    its step on SIGTERM, and the next start continues it)."""
    try:
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass  # not Linux: a killed search's run goes on to its end


def start_finetune(task_name, config_path, output_dir, log_path, probes_file=None):
    """Starts `python -m albert_tf.finetune` on a config file, its output into `log_path`.

    probes_file: where the runs of a search keep `auto`'s measurements
    (`albert_tf.training.execution.PROBES_FILE_ENV`), or None."""
    env = dict(os.environ)
    if probes_file:
        from albert_tf.training.execution import PROBES_FILE_ENV

        env[PROBES_FILE_ENV] = probes_file
    log = open(log_path, "a", encoding="utf-8")
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "albert_tf.finetune", f"--task={task_name}",
             f"--config={config_path}", f"--output_dir={output_dir}"],
            stdout=log, stderr=subprocess.STDOUT, preexec_fn=_stop_with_parent, env=env)
        if process is not None:
            _CHILDREN.add(process)
        return process
    finally:
        log.close()  # the child holds its own copy
