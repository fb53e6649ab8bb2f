"""One entry for every command: its flags, `--config`, checks and Python keyword arguments.

A command module declares its settings classes and what it does,

    PROGRAM = Program("serve", run, Flags(ServeSettings))

and gets from the classes' fields (`albert_tf.settings`), listed nowhere else:

- its absl flags, defined when the command runs (`start`), on the flag values
  it is given, so that `--help` and `--helpshort` list them and importing every
  command in one process defines nothing; a field's aliases are flags too;
- `--config=FILE.json`: settings by their flags' names (a task's options also
  under `task_options`, as a run's settings.json holds them), over the defaults
  and what supplies a command's own defaults (a task's recipe), under the flags;
- the checks, one line each and before TensorFlow loads: an unknown name with
  the nearest (`finetune has no flag --learnig_rate; did you mean
  --learning_rate?`), a flag given under its alias too, a required flag not
  given (a field without a default), a bad value (naming the field);
- `call(values)`: the command on keyword arguments, what `albert_tf.api` runs,
  with the same checks; it never reads or changes absl's flags.

A command that resumes a run from its folder (`resumes="output_dir"`) requires
only that folder up front: a saved run holds the other settings, and the
command checks them when it builds them (`Given.check_required`).
"""

import dataclasses
import logging as std_logging
import os
import sys

from absl import flags, logging

from albert_tf import input_paths, log, startup
from albert_tf.commands import cli
from albert_tf.io_utils import read_json
from albert_tf.settings import merged, missing_message, without_aliases

CONFIG = "config"


@dataclasses.dataclass(frozen=True)
class Flags:
    """A settings class whose fields are flags of a command, and where their values go.

    settings: the `Settings` class; for a group `under` a field, a function
        returning several may stand for it (the tasks' options classes, found
        when the command runs, so that a task registered by then has its flags).
    under: None: the command gets these settings; a field name (`task_options`):
        the values go in that dict field of the first group whose class has it
        (a task checks its own options).
    default_from: what gives the `unset` fields' defaults when no flag does
        ("the task's recipe"): their flags have none, and their help says so. A
        group with it is resolved by the command itself, which gets a `Given`.
    unset: those fields (None: every field).
    """

    settings: object
    under: str | None = None
    default_from: str | None = None
    unset: tuple | None = None

    def classes(self):
        return (self.settings,) if isinstance(self.settings, type) else tuple(self.settings())

    def unset_fields(self, settings_class):
        if self.default_from is None:
            return ()
        return settings_class.field_names() if self.unset is None else self.unset

    @property
    def resolved(self):
        """Whether the command resolves these settings itself (gets a `Given`)."""
        return self.default_from is not None and self.under is None


@dataclasses.dataclass(frozen=True)
class Given:
    """Settings a command resolves itself: against what supplies their defaults
    (a task's recipe, a teacher's run) or the run saved in its folder.

    settings: the class they make.
    flags: the values set explicitly, by flag or keyword argument (a task's
        options under `task_options`).
    config: the values of `--config` ({} without it), named `source` in errors.
    supplied: the fields whose defaults the command finds elsewhere.
    """

    settings: type
    flags: dict
    config: dict
    source: str | None
    supplied: tuple

    def over(self, values):
        """These settings with `values` set over the flags (a seed's own folder)."""
        return dataclasses.replace(self, flags=merged(self.flags, values))

    def check_required(self):
        """Raises ValueError naming the required flags neither given nor in `--config`."""
        self.settings.check_required(merged(self.config, self.flags), self.supplied)


def no_arguments(arguments):
    """The positional arguments a command takes by default: none."""
    if arguments:
        raise ValueError(f"unexpected arguments {arguments}")


class Program:
    """A command: `name`, the function `run` that does its work and the `groups`
    (`Flags`) of settings it takes.

    `run` gets, in the order of the groups not `under` another, each group's
    settings (a `Given` for a group resolved by the command), then any keyword
    arguments of `call`'s caller; what it returns is what `call` returns.

    resumes: the field naming a run folder whose saved run supplies the other
        settings (the only one required up front); None: every required field is.
    quiet: on the command line, hide TensorFlow's INFO lines unless `--verbosity`
        is given.
    arguments: checks the positional arguments (a `ValueError` names the mistake).
    """

    def __init__(self, name, run, *groups, resumes=None, quiet=True, arguments=no_arguments):
        self.name = name
        self.run = run
        self.groups = groups
        self.resumes = resumes
        self.quiet = quiet
        self.arguments = arguments

    # === What the groups declare ===

    def _top(self):
        """The groups whose settings `run` gets, in order."""
        return [group for group in self.groups if group.under is None]

    def _parent(self, field):
        """The top group whose class has the dict field `field` (`task_options`)."""
        return next(group for group in self._top() if field in group.settings.field_names())

    def _owners(self):
        """`{name: group}`: which group takes each flag (the first declaring it), and
        each top group's fields that are not flags (`task_options`, in a file)."""
        owners = {}
        for group in self.groups:
            for settings_class in group.classes():
                for name in cli.flag_names(settings_class):
                    owners.setdefault(name, group)
        for group in self._top():
            for name in group.settings.field_names():
                owners.setdefault(name, group)
        return owners

    def _aliases(self):
        """`{alias: flag}` of every group's fields."""
        return {alias: name for group in self.groups for settings_class in group.classes()
                for alias, name in settings_class.aliases().items()}

    def read_paths(self):
        """The flags that name a file or folder the command reads (role "reads")."""
        return self._fields_with("reads")

    def path_flags(self):
        """The flags that name a file or folder the command reads or writes."""
        return tuple(dict.fromkeys([*self._fields_with("reads"), *self._fields_with("writes")]))

    def _fields_with(self, role):
        return tuple(dict.fromkeys(name for group in self.groups
                                   for settings_class in group.classes()
                                   for name in settings_class.fields_with(role)))

    def flag_names(self):
        """Every flag of the command: the keyword arguments `call` takes."""
        names = [name for group in self.groups for settings_class in group.classes()
                 for name in cli.flag_names(settings_class)]
        return tuple(dict.fromkeys([*names, *self._aliases(), CONFIG]))

    # === absl ===

    def define(self, flag_values, module_name):
        """Defines the command's flags on `flag_values`, as flags of `module_name`."""
        for group in self.groups:
            for settings_class in group.classes():
                cli.define_flags(settings_class, flag_values,
                                 unset=group.unset_fields(settings_class),
                                 unset_help=f" Default: {group.default_from}."
                                 if group.default_from else "", module_name=module_name)
        for group in self.groups:  # (after every flag: an alias never takes a flag's name)
            for settings_class in group.classes():
                cli.define_aliases(settings_class, flag_values, module_name)
        sources = "".join(f" and {group.default_from}" for group in self._top()
                          if group.resolved)
        flags.DEFINE_string(CONFIG, None, "A JSON file of settings by their flags' names: over "
                            f"the defaults{sources}, under the flags given.",
                            flag_values=flag_values, module_name=module_name)

    def start(self, module_name):
        """Runs the command from the command line (`sys.argv`): its flags defined on
        absl's, as flags of `module_name` (which `--helpshort` lists), and parsed."""
        from absl import app

        self.define(flags.FLAGS, module_name)
        app.run(lambda argv: self.main(argv, flags.FLAGS),
                flags_parser=lambda argv: self.parse(argv, flags.FLAGS))

    def parse(self, argv, flag_values):
        """Parses `argv` into `flag_values`; returns the positional arguments. A
        flag mistake (an unknown name, with the nearest; a value that does not
        parse) exits with its line."""
        try:
            return flag_values(argv)
        except flags.UnrecognizedFlagError as e:
            sys.exit(f"error: {cli.unknown_flag(e.flagname, self.flag_names(), self.name)}")
        except flags.Error as e:
            sys.exit(f"error: {e}")

    def main(self, argv, flag_values):
        """The command on the flags parsed into `flag_values` (`argv`: what absl
        left, the program's name first); a user's mistake is one line, exit status 1."""
        startup.filter_process_noise()  # native notes (oneDNN's, CUDA's) at any time
        verbose = "verbosity" in flag_values and flag_values["verbosity"].present
        log.setup(std_logging.INFO if verbose else std_logging.WARNING)
        if self.quiet:
            cli.quiet_tensorflow(flag_values)
        with cli.user_errors():
            self.arguments(argv[1:])
            self._call(cli.given_flags(self.flag_names(), flag_values))

    # === Python ===

    def call(self, values, **extra):
        """The command on `values` (flag name -> value, as keyword arguments give
        them); `extra` goes to `run` as it is. Returns what `run` returns.
        TensorFlow's INFO lines are hidden (on absl's logger itself: a Python caller
        has no `--verbosity`, and absl's flags are the command line's)."""
        logging.get_absl_logger().setLevel(std_logging.WARNING)
        log.setup()
        return self._call(values, **extra)

    def settings(self, values):
        """The arguments `run` gets for `values`, checked as the command checks them."""
        cli.check_flag_names(values, self.flag_names(), self.name)
        values = without_aliases(values, self._aliases())
        source = values.pop(CONFIG, None)
        given = self._split(values)
        config = self._split(self._read_config(source)) if source else {}
        self._check_required(values, given, config)
        return [self._settings(group, given[group], config.get(group, {}), source)
                for group in self._top()]

    def _call(self, values, **extra):
        arguments = self.settings(values)
        given = self._paths(values)
        # Every file or folder the command reads exists (one line naming the flag).
        input_paths.check(given, self.read_paths())
        # The path flags, and any other flag given a path (--student=folder/).
        named = [*self.path_flags(), *(n for n, v in given.items()
                                      if isinstance(v, str) and os.sep in v)]
        with input_paths.naming_flags(given, named):
            return self.run(*arguments, **extra)

    def _paths(self, values):
        """The values given, by flag name: `--config`'s under the flags', a task's
        options among them."""
        values = without_aliases(values, self._aliases())
        source = values.pop(CONFIG, None)
        paths = {**(self._read_config(source) if source else {}), **values}
        return {**paths, **(paths.get("task_options") or {})}

    # === From values to settings ===

    def _split(self, values):
        """`values` (by flag name; a task's options by name or already under
        `task_options`) as `{top group: its values}`."""
        owners, parts = self._owners(), {group: {} for group in self._top()}
        for name, value in values.items():
            group = owners[name]
            if group.under is None:
                parts[group] = merged(parts[group], {name: value})
            else:
                parent = parts[self._parent(group.under)]
                parent[group.under] = {**parent.get(group.under, {}), name: value}
        return parts

    def _read_config(self, path):
        """The settings of the `--config` file `path`, by flag name (aliases resolved)."""
        if not os.path.isfile(path):
            raise FileNotFoundError(f"--config: no such file {path}")
        try:
            values = read_json(path)
        except (OSError, ValueError) as e:
            raise ValueError(f"--config: {e}" if path in str(e) else
                             f"--config: {path}: {e}") from None
        if not isinstance(values, dict):
            raise ValueError(f"{path}: expected a JSON object of settings, got "
                             f"{type(values).__name__}")
        try:
            cli.check_flag_names(values, [*self._owners(), *self._aliases()], self.name)
            return without_aliases(values, self._aliases())
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None

    def _check_required(self, values, given, config):
        """Raises ValueError naming the required flags not given (`values`: the
        flags; `given`, `config`: by group, the flags' and the file's values)."""
        if self.resumes is not None:
            missing = [self.resumes] if values.get(self.resumes) is None else []
        else:
            missing = [name for group in self._top() for name in group.settings.missing(
                merged(config.get(group, {}), given[group]),
                group.unset_fields(group.settings))]
        if missing:
            raise ValueError(missing_message(missing))

    @staticmethod
    def _settings(group, given, config, source):
        """What `run` gets of `group`: its settings built from the defaults, the
        file's values and the flags', or (resolved by the command) a `Given`."""
        if group.resolved:
            return Given(group.settings, given, config, source,
                         group.unset_fields(group.settings))
        return group.settings.from_dict(merged(config, given))
