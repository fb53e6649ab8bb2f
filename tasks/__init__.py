"""The task registry: `tasks.get(name)`.

A task supplies its reader, head, loss, metrics, post-processing and default
recipe. Every task module is imported here, so that the registry is complete
whatever the caller imported.
"""

_REGISTRY = {}


def register(task):
    """Adds `task` (an object with a unique `name`) to the registry; returns it."""
    if task.name in _REGISTRY:
        raise ValueError(f"task {task.name!r} is already registered")
    _REGISTRY[task.name] = task
    return task


def get(name):
    """The task called `name`; an unknown name lists the known ones."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(names())}")
    return _REGISTRY[name]


def names():
    return sorted(_REGISTRY)
