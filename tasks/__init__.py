"""The task registry: `tasks.get(name)`; every task type is one folder of this package.

A task type's folder (`tasks/squad/`, ...) holds a light `__init__.py` that
declares its tasks (`DECLARED`: `tasks.base.Declared` entries with their names,
options, export options and recipes, the folder's `recipes.json`) beside the
modules that implement them. The registry finds the folders itself, so a new
task type touches nothing outside its folder: the commands make their flags,
resolve the recipe and check the settings from the declarations without
importing TensorFlow, and a task's module is imported when the task is first
looked up (`get`), where it `register`s its `tasks.base.Task`.

Task types of your own live in folders of the same form anywhere: name the
folders that hold them in `ALBERT_TF_TASK_PATH` (`os.pathsep`-separated, as
`PYTHONPATH`); each is then found as the built-in ones are, as
`albert_tf.tasks.<folder>` (a model folder records its task's name, so the
variable must be set wherever that task is loaded back).
"""

import contextlib
import functools
import importlib
import os
import pkgutil
import sys

from albert_tf.registry import Registry

TASK_PATH_ENV = "ALBERT_TF_TASK_PATH"
# The folders of the user's own task types, searched as this package's own.
__path__ += [os.path.abspath(p) for p in os.environ.get(TASK_PATH_ENV, "").split(os.pathsep)
             if p]


@contextlib.contextmanager
def task_path(folder):
    """Inside, `folder` is searched for task types too, as `ALBERT_TF_TASK_PATH`
    folders are (a program or a test that adds its own in-process); on leaving,
    the tasks it declares are unregistered and its modules forgotten."""
    folder = os.path.abspath(folder)
    __path__.append(folder)
    declarations.cache_clear()
    added = set(declarations()) - set(REGISTRY.registered())
    try:
        yield
    finally:
        __path__.remove(folder)
        declarations.cache_clear()
        for name in added & set(REGISTRY.registered()):
            REGISTRY.unregister(name)
        packages = {f"{__name__}.{info.name}" for info in pkgutil.iter_modules([folder])}
        for module in [m for m in sys.modules if m.rpartition(".")[0] in packages
                       or m in packages]:
            del sys.modules[module]


@functools.cache
def declarations():
    """`{name: Declared}` of every task type folder found (their light `__init__`s)."""
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if not info.ispkg:
            continue
        package = importlib.import_module(f"{__name__}.{info.name}")
        for entry in getattr(package, "DECLARED", ()):
            if entry.name in found:
                raise ValueError(f"task {entry.name!r} is declared by {found[entry.name].module}"
                                 f" and {entry.module}")
            found[entry.name] = entry
    return found


class _TaskRegistry(Registry):
    """The tasks: those registered, and those declared by a task type's folder
    (their module imported on first lookup)."""

    def check_name(self, name):
        try:
            super().check_name(name)
        except ValueError as e:
            raise ValueError(f"{e} (task types of your own: their folders in "
                             f"{TASK_PATH_ENV})") from None


REGISTRY = _TaskRegistry(
    "task", declared=lambda: {name: entry.module for name, entry in declarations().items()})
register = REGISTRY.register
get = REGISTRY.get
names = REGISTRY.names


def declared(name):
    """The task `name` as far as its settings need it (`name`, `recipe`,
    `scratch_recipe`, `options_class`, `options`), without importing its module: the
    registered task if it is registered, else its `Declared` entry. An unknown name
    lists the known ones (with the closest)."""
    REGISTRY.check_name(name)
    if name in REGISTRY.registered():
        return REGISTRY.get(name)
    return declarations()[name]


def _classes(attribute):
    """The distinct classes of `attribute` of every task (declared ones first),
    without importing any task's module."""
    found = []
    entries = [*declarations().values(), *REGISTRY.registered().values()]
    for entry in entries:
        value = getattr(entry, attribute)
        if value is not None and value not in found:
            found.append(value)
    return found


def option_classes():
    """The distinct options classes of the tasks (the commands' flags)."""
    return _classes("options_class")


def export_option_classes():
    """The distinct export options classes of the tasks (the export command's flags)."""
    return _classes("export_options_class")


def data_sources():
    """`{task name: albert_tf.datasets.DataSource}` of the tasks with a public data set
    (what `albert-tf download --dataset` fetches), from the declarations: no task
    module, and no TensorFlow, is imported."""
    return {name: entry.data_source for name, entry in declarations().items()
            if entry.data_source is not None}
