"""Exceptions that end a command with one line, not a traceback.

Beside `OSError` and `ValueError` (a missing file, a bad setting; a
`CheckpointError` is a `ValueError`): `RunStopped`, a run that ended by a
guard or a decision (diverged, interrupted), its message saying what was kept
and what to do next. `albert_tf.cli.user_errors` prints them as `error: ...`,
except a `StopAsked`: a stop the user asked for (Ctrl-C, SIGTERM) is no error.
"""


class RunStopped(RuntimeError):
    """A run ended early on purpose; the message says what was saved and how to go on."""


class StopAsked(RunStopped):
    """The user stopped the run (Ctrl-C, SIGTERM) and its step was saved: said as it
    is, exit status 0."""
