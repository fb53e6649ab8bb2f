"""What every albert_tf command does alike.

A mistake of the user's (a missing flag, a bad file, a bad value) ends the
run with one line, `error: <what was wrong, and where>`, and exit status 1,
not a traceback; `--verbosity=1` logs the traceback too. The flags of a
command are made from its settings classes (`define_flags`, which
`albert_tf.commands.program` calls for every command), so that defaults and
help texts live in one place. Imports nothing heavy, so that flag checks run
before TensorFlow loads.
"""

import contextlib
import dataclasses
import difflib
import sys

from absl import flags, logging

from albert_tf.errors import RunStopped, StopAsked
from albert_tf.io_utils import release_folders
from albert_tf.extras import MissingExtra
from albert_tf.settings import is_list, value_type
from albert_tf.settings import without_aliases  # noqa: F401 (with the flags' helpers)
from albert_tf.startup import load_tensorflow  # noqa: F401 (what programs call through cli)


def define_flags(settings_class, flag_values=flags.FLAGS, unset=(), unset_help="",
                 module_name=None):
    """Defines one flag per field of `settings_class` (fields declared with `flag=True`).

    The flag has the field's default, help text and choices (a `tuple[str, ...]`
    field: a comma-separated list flag); a field without a default and the
    fields in `unset` get none (None: "not given"), the latter's help ending in
    `unset_help`. A name already defined (a field shared by two settings
    classes) is skipped. The flags belong to `module_name` (default: the calling
    module), whose flags `--helpshort` lists.
    """
    if module_name is None:
        caller = sys._getframe(1).f_globals.get("__name__")
        module_name = sys.argv[0] if caller == "__main__" else caller
    for field in dataclasses.fields(settings_class):
        if not field.metadata.get("flag", True) or field.name in flag_values:
            continue
        default = None if field.name in unset or field.default is dataclasses.MISSING \
            else field.default
        help_text = field.metadata.get("help", "") + (unset_help if field.name in unset else "")
        _define(field, field.name, default, help_text, flag_values, module_name)


def define_aliases(settings_class, flag_values=flags.FLAGS, module_name=None):
    """Defines a flag per alias of `settings_class`'s fields (`setting(aliases=...)`):
    of its field's kind, not given by default, read as the field's flag
    (`without_aliases`). A name already defined is skipped."""
    for field in dataclasses.fields(settings_class):
        for alias in field.metadata.get("aliases", ()):
            if alias not in flag_values:
                _define(field, alias, None, f"Alias for --{field.name}.", flag_values,
                        module_name)


def _define(field, name, default, help_text, flag_values, module_name):
    """Defines the flag `name` of `field`'s kind: an enum of its choices, a
    comma-separated list, a bool, int, float or string."""
    kind, _ = value_type(field)
    where = {"flag_values": flag_values, "module_name": module_name}
    if field.metadata.get("choices"):
        flags.DEFINE_enum(name, default, list(field.metadata["choices"]), help_text, **where)
    elif is_list(kind):
        flags.DEFINE_list(name, None if default is None else list(default), help_text, **where)
    else:
        define = {bool: flags.DEFINE_boolean, int: flags.DEFINE_integer,
                  float: flags.DEFINE_float}.get(kind, flags.DEFINE_string)
        define(name, default, help_text, **where)


def flag_fields(settings_class, flag_values=flags.FLAGS):
    """The names of `settings_class`'s fields that have a flag in `flag_values`."""
    return [f.name for f in dataclasses.fields(settings_class)
            if f.metadata.get("flag", True) and f.name in flag_values]


def given_settings(settings_class, flag_values=flags.FLAGS):
    """`{field: value}` of the flags of `settings_class` the user set on the command line."""
    return {name: flag_values[name].value for name in flag_fields(settings_class, flag_values)
            if flag_values[name].present}


def flag_names(settings_class):
    """The names of `settings_class`'s fields that commands make flags of."""
    return tuple(f.name for f in dataclasses.fields(settings_class)
                 if f.metadata.get("flag", True))


def given_flags(names, flag_values=flags.FLAGS):
    """`{name: value}` of the flags in `names` the user set on the command line: a
    command's flags as the keyword arguments `albert_tf.api` takes."""
    return {name: flag_values[name].value for name in names
            if name in flag_values and flag_values[name].present}


def unknown_flag(name, known, command):
    """The line saying that `command` (whose flags are `known`) has no flag `name`,
    with the nearest."""
    near = difflib.get_close_matches(name, known, n=1)
    return f"{command} has no flag --{name}" + (f"; did you mean --{near[0]}?" if near else "")


def check_flag_names(values, known, command):
    """Raises ValueError naming a key of `values` that is not a flag of `command`
    (`known`: its flag names), with the nearest flag."""
    for name in sorted(set(values) - set(known)):
        raise ValueError(unknown_flag(name, known, command))


def settings_from_flags(settings_class, flag_values=flags.FLAGS):
    """A `settings_class` from its flags' values (defaults included); a bad value
    raises `ValueError` naming the field."""
    return settings_class.from_dict(
        {name: flag_values[name].value for name in flag_fields(settings_class, flag_values)})


@contextlib.contextmanager
def user_errors(*error_types):
    """Turns OSError, ValueError, `albert_tf.errors.RunStopped`, a missing extra
    (`albert_tf.extras.MissingExtra`) and `error_types` raised inside into
    `error: <message>` on stderr and exit status 1; Ctrl-C outside training
    (which saves its step itself) into one line too; a stop the user asked for
    (`StopAsked`: Ctrl-C or SIGTERM while training) into its line, exit status 0.
    The folders the process holds are let go first, so that the same command
    can run again at once."""
    try:
        yield
    except StopAsked as e:
        release_folders()
        print(f"stopped as asked: {e}", file=sys.stderr, flush=True)
        sys.exit(0)
    except (OSError, ValueError, RunStopped, MissingExtra, *error_types) as e:
        logging.debug("failed", exc_info=True)
        release_folders()
        sys.exit(f"error: {e}")
    except KeyboardInterrupt:
        logging.debug("interrupted", exc_info=True)
        release_folders()
        print("error: interrupted; every file is written whole or not at all, so the same "
              "command continues from what was finished", file=sys.stderr)
        sys.exit(130)


def quiet_tensorflow(flag_values):
    """Hides TensorFlow's INFO lines (checkpoint sharding etc.) unless the user
    asked for a verbosity (absl's `--verbosity`, where `flag_values` has it)."""
    if "verbosity" not in flag_values or not flag_values["verbosity"].present:
        logging.set_verbosity(logging.WARNING)
