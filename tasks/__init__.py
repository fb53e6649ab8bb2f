"""The task registry: `tasks.get(name)`.

A task supplies its reader, head, loss, metrics, post-processing and default
recipe. The task modules are imported on the first lookup, so that the
registry is always complete, while light tools such as `tasks.squad_eval`
start without importing TensorFlow.
"""

import importlib

_REGISTRY = {}
_TASK_MODULES = ("tasks.classification", "tasks.squad")


def register(task):
    """Adds `task` (an object with a unique `name`) to the registry; returns it."""
    if task.name in _REGISTRY:
        raise ValueError(f"task {task.name!r} is already registered")
    _REGISTRY[task.name] = task
    return task


def _load_all():
    for module in _TASK_MODULES:
        importlib.import_module(module)


def get(name):
    """The task called `name`; an unknown name lists the known ones."""
    _load_all()
    if name not in _REGISTRY:
        raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(names())}")
    return _REGISTRY[name]


def names():
    _load_all()
    return sorted(_REGISTRY)
