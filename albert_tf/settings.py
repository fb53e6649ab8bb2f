"""Settings declared once: each field with its default, help text and allowed values.

Every command's settings (`FinetuneSettings`, `PretrainSettings`, the
pretraining-data `DataOptions`, a task's options) are frozen dataclasses of
`setting(...)` fields. From that one declaration come

- validation at construction (`Settings.__post_init__`): the type, the
  allowed values or range of every field, then the class's cross-field
  `checks()`; an error names the field, what is allowed and the value
  (`"batch_size must be >= 1, got 0"`);
- the command-line flags and the Python API's keyword arguments of every
  command (`albert_tf.commands.program`), with the same defaults and help
  texts: a field without a default is a required flag, a field's `aliases`
  are other names of its flag (and of its key in files written before a
  rename);
- what a field is for beyond its value, its `roles` (`ROLES`): which fields a
  task's recipe sets, which may change when a run resumes, ...;
- `settings.json` round trips (`to_dict` / `from_dict`, unknown keys rejected).

Imports nothing heavy: settings are checked before TensorFlow loads.
"""

import dataclasses
import json
import math
import types
import typing

from albert_tf.io_utils import atomic_file


@dataclasses.dataclass(frozen=True)
class Rule:
    """A condition on one value and how to say it: `Rule(lambda v: v > 0, "> 0")`."""

    test: typing.Callable
    want: str


POSITIVE = Rule(lambda v: v >= 1, ">= 1")
NON_NEGATIVE = Rule(lambda v: v >= 0, ">= 0")
NOT_EMPTY = Rule(lambda v: len(v) > 0, "given (not empty)")
POSITIVE_REAL = Rule(lambda v: v > 0, "> 0")
PROBABILITY = Rule(lambda v: 0 <= v < 1, "in [0, 1)")
CLOSED_PROBABILITY = Rule(lambda v: 0 <= v <= 1, "in [0, 1]")
OPEN_PROBABILITY = Rule(lambda v: 0 < v < 1, "in (0, 1)")


def at_least(minimum, why=""):
    return Rule(lambda v: v >= minimum, f">= {minimum}{f' ({why})' if why else ''}")


# What a field can be for beyond its value (`setting(roles=...)`, `Settings.fields_with`).
ROLES = {
    "recipe": "a fine-tuning recipe sets it (a task's `Recipe`; the default of its flag is "
              "the task's recipe)",
    "scratch": "the recipe of a model trained from random weights sets it (over the task's)",
    "resumable": "may change when a run is resumed (it does not change the run's result)",
    "invocation": "holds for one invocation only, never saved over the run's own",
    "auto": "its `auto` is resolved once at the start of a run and saved resolved",
    "run_control": "asks a finished run to do a step again",
    "reads": "names a file or folder the command reads (checked to exist before TensorFlow "
             "loads, `albert_tf.input_paths`)",
    "writes": "names a file, folder or path prefix the command writes",
}


def setting(default=dataclasses.MISSING, help="", choices=None, rule=None, flag=True,
            aliases=(), roles=()):
    """A settings field.

    default: the value when none is given (`dataclasses.MISSING`: required, a
        flag the user must give); a dict default is copied per instance.
    help: the flag's help text.
    choices: the allowed values (strings), for an enum flag.
    rule: a `Rule` every given value must satisfy (None passes for optional fields).
    flag: whether commands make a flag of it (False for structured fields).
    aliases: other names of its flag and of its key in a settings file (a former
        name, so that old scripts and files keep working).
    roles: what it is for beyond its value, names of `ROLES`.
    """
    unknown = sorted(set(roles) - set(ROLES))
    if unknown:
        raise ValueError(f"unknown role(s) {unknown}; known: {', '.join(ROLES)}")
    metadata = {"help": help, "choices": tuple(choices) if choices else None, "rule": rule,
                "flag": flag, "aliases": tuple(aliases), "roles": tuple(roles)}
    if isinstance(default, dict):
        return dataclasses.field(default_factory=lambda: dict(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def redefault(cls, name, default):
    """The field `name` of settings class `cls` with another default (for a subclass)."""
    field = {f.name: f for f in dataclasses.fields(cls)}[name]
    return dataclasses.field(default=default, metadata=field.metadata)


def value_type(field):
    """`(type, optional)` of a field: `int | None` -> `(int, True)`; a union of
    several types gives them as a tuple: `int | str | None` -> `((int, str), True)`
    (its flag is a string flag, its value checked by the field's rule). A
    `tuple[str, ...]` field is a list of strings (a comma-separated flag)."""
    annotation = field.type
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(args) < len(typing.get_args(annotation))
        return (args[0] if len(args) == 1 else tuple(args)), optional
    return annotation, False


def is_list(kind):
    """Whether a field of type `kind` (from `value_type`) holds a list of strings."""
    return typing.get_origin(kind) is tuple


def _type_error(kind, value):
    if is_list(kind):
        ok = isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
        return None if ok else "a list of strings"
    if isinstance(kind, tuple):  # a union: any of its types (the rule says what is meant)
        wants = [_type_error(k, value) for k in kind]
        return None if None in wants else " or ".join(wants)
    if kind is bool:
        return None if isinstance(value, bool) else "true or false"
    if kind is int:
        return None if isinstance(value, int) and not isinstance(value, bool) else "an integer"
    if kind is float:
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
              and math.isfinite(value))
        return None if ok else "a finite number"
    if kind is str:
        return None if isinstance(value, str) else "a string"
    if kind is dict:
        return None if isinstance(value, dict) else "a JSON object"
    return None


def missing_message(names):
    """The line saying that the required flags `names` were not given."""
    return f"missing required flag(s): {', '.join(f'--{name}' for name in names)}"


def without_aliases(values, aliases):
    """`values` (name -> value) with each alias (`{alias: name}`) under its
    field's name; a field given under both names raises ValueError naming both."""
    values = dict(values)
    for alias, name in aliases.items():
        if alias in values:
            if name in values:
                raise ValueError(f"give --{name} or its alias --{alias}, not both")
            values[name] = values.pop(alias)
    return values


def merged(lower, upper):
    """`upper`'s values over `lower`'s; a dict value (a task's options) over the
    other's key by key, so that a flag given for one option keeps a file's others."""
    values = dict(lower)
    for name, value in upper.items():
        below = values.get(name)
        values[name] = {**below, **value} if isinstance(below, dict) and \
            isinstance(value, dict) else value
    return values


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    """Base of every settings class: validates its fields on construction."""

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            kind, optional = value_type(field)
            if value is None and optional:
                continue
            want = _type_error(kind, value)
            if want is None and field.metadata.get("choices") and \
                    value not in field.metadata["choices"]:
                want = f"one of {', '.join(field.metadata['choices'])}"
            rule = field.metadata.get("rule")
            if want is None and rule is not None and not rule.test(value):
                want = rule.want
            if want is not None:
                raise ValueError(f"{field.name} must be {want}, got {value!r}")
            if kind is float and isinstance(value, int):
                object.__setattr__(self, field.name, float(value))
            if is_list(kind) and isinstance(value, list):  # frozen all the way down
                object.__setattr__(self, field.name, tuple(value))
        for check in self.checks():
            if len(check) == 2 and not check[0]:
                raise ValueError(check[1])
            if len(check) == 3 and not check[1]:
                raise ValueError(f"{check[0]} must be {check[2]}, got "
                                 f"{getattr(self, check[0])!r}")

    def checks(self):
        """Cross-field conditions: `(field, holds, what it must be)` triples, or
        `(holds, message)` pairs where a sentence says it better."""
        return ()

    @classmethod
    def field_names(cls):
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def fields_with(cls, role):
        """The names of the fields that play `role` (a name of `ROLES`), in order."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; known: {', '.join(ROLES)}")
        return tuple(f.name for f in dataclasses.fields(cls)
                     if role in f.metadata.get("roles", ()))

    @classmethod
    def aliases(cls):
        """`{alias: field name}` of every field's `aliases`."""
        return {alias: f.name for f in dataclasses.fields(cls)
                for alias in f.metadata.get("aliases", ())}

    @classmethod
    def required(cls):
        """The names of the fields without a default, in order."""
        return tuple(f.name for f in dataclasses.fields(cls)
                     if f.default is dataclasses.MISSING
                     and f.default_factory is dataclasses.MISSING)

    @classmethod
    def missing(cls, values, supplied=()):
        """The required fields that `values` (name -> value) does not give (None
        counts as not given), but for those in `supplied` (whose values come from
        elsewhere, e.g. a task's recipe)."""
        return [name for name in cls.required()
                if values.get(name) is None and name not in supplied]

    @classmethod
    def check_required(cls, values, supplied=()):
        """Raises ValueError naming the `missing` fields as flags."""
        missing = cls.missing(values, supplied)
        if missing:
            raise ValueError(missing_message(missing))

    @classmethod
    def from_dict(cls, values, source=None):
        """Settings from a dict; an alias stands for its field (a file written
        before a rename), unknown keys, missing required ones and bad values
        raise `ValueError`, prefixed with `source` (a file, "flags") when given."""
        prefix = f"{source}: " if source else ""
        try:
            values = without_aliases(values, cls.aliases())
            unknown = sorted(set(values) - set(cls.field_names()))
            if unknown:
                raise ValueError(f"unknown setting(s) {unknown}; known: "
                                 f"{', '.join(cls.field_names())}")
            cls.check_required(values)
            return cls(**values)
        except ValueError as e:
            raise ValueError(f"{prefix}{e}") from None

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)

    def to_dict(self):
        return dataclasses.asdict(self)

    def save(self, path):
        """Writes the settings as JSON to `path`, atomically."""
        with atomic_file(path) as f:
            json.dump(self.to_dict(), f, indent=2, sort_keys=True)
