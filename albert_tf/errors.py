"""Exceptions that end a command with one line, not a traceback.

Beside `OSError` and `ValueError` (a missing file, a bad setting; a
`CheckpointError` is a `ValueError`): `RunStopped`, a run that ended by a
guard or a decision (diverged, interrupted), its message saying what was kept
and what to do next. `albert_tf.cli.user_errors` prints them as `error: ...`,
except a `StopAsked`: a stop the user asked for (Ctrl-C, SIGTERM) is no error.
"""

import re


class RunStopped(RuntimeError):
    """A run ended early on purpose; the message says what was saved and how to go on."""


class StopAsked(RunStopped):
    """The user stopped the run (Ctrl-C, SIGTERM) and its step was saved: said as it
    is, exit status 0."""


def op_message(message):
    """The op's own words in a TensorFlow error, on one line: without the
    `{{function_node ...}}` prefix, node names, `[Op:...]` and stack lines it
    wraps them in."""
    noise = ("Graph execution error:", "Detected at node", "<stack traces unavailable>", "File ")
    lines = [re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", line).split(" [Op:")[0].strip()
             for line in message.splitlines()
             if line.strip() and not line[:1].isspace() and not line.startswith(noise)]
    return "; ".join(line for line in lines if line) or message.strip().splitlines()[0]
