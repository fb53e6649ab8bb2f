"""What every albert_tf command does alike.

A mistake of the user's (a missing flag, a bad file, a bad value) ends the
run with one line, `error: <what was wrong, and where>`, and exit status 1,
not a traceback; `--verbosity=1` logs the traceback too. Imports nothing
heavy, so that flag checks run before TensorFlow loads.
"""

import contextlib
import sys

from absl import logging


def check_arguments(argv, flag_values, required=()):
    """Exits on positional arguments; raises ValueError naming the missing
    `required` flags."""
    if len(argv) > 1:
        sys.exit(f"error: unexpected arguments {argv[1:]}")
    missing = [f"--{name}" for name in required if not flag_values[name].value]
    if missing:
        raise ValueError(f"missing required flag(s): {', '.join(missing)}")


@contextlib.contextmanager
def user_errors(*error_types):
    """Turns OSError, ValueError and `error_types` raised inside into
    `error: <message>` on stderr and exit status 1."""
    try:
        yield
    except (OSError, ValueError, *error_types) as e:
        logging.debug("failed", exc_info=True)
        sys.exit(f"error: {e}")


def quiet_tensorflow(flag_values):
    """Hides TensorFlow's INFO lines (checkpoint sharding etc.) unless the user
    asked for a verbosity."""
    if not flag_values["verbosity"].present:
        logging.set_verbosity(logging.WARNING)
