"""The search space: `learning_rate=1e-5:5e-5:log | batch_size=16,32 | num_epochs=2,3`.

Parameters are separated by `|`; each is `name=low:high` (a uniform range),
`name=low:high:log` (log-uniform) or `name=a,b,c` (a choice). A name is a field
of the fine-tuning settings class (checked when the space is parsed, so a typo
is one line before any work); values take the field's type (an integer field's
range draws integers).
"""

import dataclasses

from albert_tf.settings import value_type

# Settings a search does not vary: where runs go, what they are, and the seeds
# (`--seeds_per_trial` varies those).
FIXED = ("output_dir", "task", "task_options", "seed", "data_dir")
KINDS = ("uniform", "log", "choice")


@dataclasses.dataclass(frozen=True)
class Parameter:
    """One axis of the space: a `kind` range `[low, high]` or `choices`, of type `type`."""

    name: str
    kind: str
    type: type
    low: object = None
    high: object = None
    choices: tuple = ()

    def suggest(self, trial):
        """The value an Optuna trial draws for this parameter."""
        if self.kind == "choice":
            return trial.suggest_categorical(self.name, list(self.choices))
        if self.type is int:
            return trial.suggest_int(self.name, self.low, self.high, log=self.kind == "log")
        return trial.suggest_float(self.name, self.low, self.high, log=self.kind == "log")

    def extremes(self):
        """The values that bound the parameter (to check against the settings first)."""
        return list(self.choices) if self.kind == "choice" else [self.low, self.high]


def _value(text, kind, where):
    try:
        if kind is bool:
            if text.lower() not in ("true", "false"):
                raise ValueError
            return text.lower() == "true"
        return kind(text)
    except ValueError:
        name = {int: "an integer", float: "a number", bool: "true or false"}.get(kind, kind)
        raise ValueError(f"--space: {where}: {text!r} is not {name}") from None


def parse_space(text, settings_class):
    """The `Parameter`s of a `--space` string; a `ValueError` names the bad part."""
    fields = {f.name: f for f in dataclasses.fields(settings_class)
              if f.metadata.get("flag", True) and f.name not in FIXED}
    parameters = []
    for part in (p.strip() for p in text.split("|")):
        if not part:
            continue
        name, sep, values = (s.strip() for s in part.partition("="))
        if not sep or not values:
            raise ValueError(f"--space: {part!r} is not name=low:high[:log] or name=a,b,...")
        if name not in fields:
            raise ValueError(f"--space: unknown setting {name!r}; a search may vary "
                             f"{', '.join(sorted(fields))}")
        if any(p.name == name for p in parameters):
            raise ValueError(f"--space: {name} is given twice")
        kind, _ = value_type(fields[name])
        parameters.append(_parameter(name, kind, values, part))
    if not parameters:
        raise ValueError("--space: no parameters (e.g. 'learning_rate=1e-5:5e-5:log | "
                         "batch_size=16,32')")
    return tuple(parameters)


def _parameter(name, kind, values, part):
    if ":" in values:
        bounds = values.split(":")
        scale = "uniform"
        if len(bounds) == 3 and bounds[2] in ("log", "uniform"):
            scale = bounds.pop()
        if len(bounds) != 2 or kind not in (int, float):
            raise ValueError(f"--space: {part!r}: a range is low:high or low:high:log, of a "
                             "numeric setting")
        low, high = (_value(b, kind, part) for b in bounds)
        if not low < high or (scale == "log" and low <= 0):
            raise ValueError(f"--space: {part!r}: a range needs low < high"
                             + (" and low > 0 (log)" if scale == "log" else ""))
        return Parameter(name, scale, kind, low, high)
    choices = tuple(_value(v.strip(), kind, part) for v in values.split(","))
    if len(set(choices)) != len(choices):
        raise ValueError(f"--space: {part!r}: a value is given twice")
    return Parameter(name, "choice", kind, choices=choices)


def grid(parameters):
    """The grid of a space of choices (Optuna's `GridSampler` search space)."""
    ranges = [p.name for p in parameters if p.kind != "choice"]
    if ranges:
        raise ValueError(f"--sampler=grid needs a list of values for every parameter; "
                         f"{', '.join(ranges)} is a range")
    return {p.name: list(p.choices) for p in parameters}
