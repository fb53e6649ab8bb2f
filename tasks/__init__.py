"""The task registry: `tasks.get(name)`.

A task supplies its reader, head, loss, metrics, post-processing, serving
module and default recipe (`tasks.base.Task`). The built-in tasks are declared
here by name, with the module that registers each and its options class:
their names, options (the commands' flags) and recipes are known without
importing TensorFlow, so that a command checks its settings within a second,
and a task's module is imported when the task is first looked up
(`tasks.get`). Light tools such as `albert_tf.tasks.squad.evaluate` start without
it too.
"""

import dataclasses
import importlib

from albert_tf.registry import Registry
from albert_tf.tasks.base import Recipes, task_options

_LONG_INPUTS = "albert_tf.tasks.long_inputs:LongInputOptions"
_SQUAD = "albert_tf.tasks.options:SquadOptions"
_CHOICE = "albert_tf.tasks.options:ChoiceOptions"
# name -> (the module that registers the task, its options class as "module:Class"
# [, its export options class]).
DECLARED = {
    **{name: ("albert_tf.tasks.classification", _LONG_INPUTS)
       for name in ("cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte", "wnli")},
    "squad": ("albert_tf.tasks.squad.task", _SQUAD),
    "squad_v2": ("albert_tf.tasks.squad.task", _SQUAD,
                 "albert_tf.tasks.options:SquadExportOptions"),
    **{name: ("albert_tf.tasks.clue", _LONG_INPUTS)
       for name in ("afqmc", "tnews", "iflytek", "cmnli", "ocnli", "cluewsc2020", "csl")},
    "cmrc2018": ("albert_tf.tasks.cmrc2018", "albert_tf.tasks.options:Cmrc2018Options"),
    "text_classification": ("albert_tf.tasks.text_classification",
                            "albert_tf.tasks.text_classification_data:TextOptions",
                            "albert_tf.tasks.text_classification_data:TextExportOptions"),
    "text_regression": ("albert_tf.tasks.text_classification",
                        "albert_tf.tasks.text_classification_data:TextOptions"),
    "multiple_choice": ("albert_tf.tasks.multiple_choice",
                        "albert_tf.tasks.options:MultipleChoiceOptions"),
    "race": ("albert_tf.tasks.race", _CHOICE),
    "c3": ("albert_tf.tasks.c3", _CHOICE),
    "token_classification": ("albert_tf.tasks.token_classification",
                             "albert_tf.tasks.options:TokenOptions"),
}

REGISTRY = Registry("task", declared={name: entry[0] for name, entry in DECLARED.items()})
register = REGISTRY.register
get = REGISTRY.get
names = REGISTRY.names


def _import_class(path):
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


@dataclasses.dataclass(frozen=True)
class Declaration(Recipes):
    """A built-in task before its module is imported: what a command's settings
    are resolved and checked with (`albert_tf.training.settings.resolve`: the
    recipes, the options), as `tasks.base.Task` has them."""

    name: str
    options_path: str | None  # "module:Class"

    @property
    def options_class(self):
        return _import_class(self.options_path) if self.options_path else None

    def options(self, settings):
        return task_options(self.name, self.options_class, settings.task_options)


def declared(name):
    """The task `name` as far as its settings need it (`name`, `recipe`,
    `scratch_recipe`, `options_class`, `options`), without importing its module: the
    registered task if it is registered, else its `Declaration`. An unknown name
    lists the known ones (with the closest)."""
    REGISTRY.check_name(name)
    if name in DECLARED and name not in REGISTRY.registered():
        return Declaration(name, DECLARED[name][1])
    return REGISTRY.get(name)


def option_classes():
    """The distinct options classes of the tasks (for the commands' flags), in the
    declared order, then those of tasks registered from elsewhere; without
    importing the built-in tasks' modules."""
    found = []
    for entry in DECLARED.values():
        options_class = _import_class(entry[1])
        if options_class not in found:
            found.append(options_class)
    for task in REGISTRY.registered().values():
        if task.options_class is not None and task.options_class not in found:
            found.append(task.options_class)
    return found


def export_option_classes():
    """The distinct export options classes of the tasks (the export command's flags),
    the declared ones first; without importing the built-in tasks' modules."""
    found = []
    for entry in DECLARED.values():
        options_class = _import_class(entry[2]) if len(entry) > 2 else None
        if options_class is not None and options_class not in found:
            found.append(options_class)
    for task in REGISTRY.registered().values():
        options = task.export_options_class
        if options is not None and options not in found:
            found.append(options)
    return found


def data_sources():
    """`{task name: albert_tf.datasets.DataSource}` of the tasks with a public data set
    (what `albert-tf download --dataset` fetches)."""
    return {name: task.data_source for name, task in REGISTRY.entries().items()
            if task.data_source is not None}
