"""The project's own messages: one line each, `warning: ...`, on stderr.

Every module logs through `logging.getLogger(__name__)` (a child of the
"albert_tf" logger); `setup` gives that logger its handler and format, so
that a message reads as the commands' own lines do (`error: ...`) and not in
absl's format (`W1205 02:29:34.305735 140354663549824 run_model.py:89] ...`),
whatever handlers absl or a notebook put on the root logger.
"""

import logging
import sys

LOGGER = "albert_tf"


class _Stderr(logging.StreamHandler):
    """Writes to `sys.stderr` as it is at each message (a notebook's, a test's capture)."""

    def __init__(self):
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):  # (StreamHandler sets it; the current sys.stderr is used)
        pass


class _OneLine(logging.Formatter):
    def format(self, record):
        message = record.getMessage().replace("\n", " ")
        return f"{record.levelname.lower()}: {message}"


def _not_ours(record):
    """A filter for absl's handler: the project's messages have their own."""
    return not (record.name == LOGGER or record.name.startswith(LOGGER + "."))


def setup(level=logging.WARNING):
    """The "albert_tf" logger with its one-line handler at `level` (once; a second
    call sets the level only). Its messages still reach the root logger's
    handlers (a test's capture, a notebook's own), except absl's, which would
    print them a second time in its format."""
    logger = logging.getLogger(LOGGER)
    if not any(isinstance(h, _Stderr) for h in logger.handlers):
        handler = _Stderr()
        handler.setFormatter(_OneLine())
        logger.addHandler(handler)
    logger.setLevel(level)
    from absl import logging as absl_logging

    handler = absl_logging.get_absl_handler()
    if _not_ours not in handler.filters:
        handler.addFilter(_not_ours)
    return logger
