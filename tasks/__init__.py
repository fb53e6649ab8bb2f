"""The task registry: `tasks.get(name)`.

A task supplies its reader, head, loss, metrics, post-processing, serving
module and default recipe (`tasks.base.Task`). The task modules are imported
on the first lookup, so that the registry is always complete, while light
tools such as `tasks.squad.evaluate` start without importing TensorFlow.
"""

from albert_tf.registry import Registry

REGISTRY = Registry("task", ("tasks.classification", "tasks.squad.task", "tasks.clue",
                             "tasks.cmrc2018", "tasks.text_classification",
                             "tasks.multiple_choice", "tasks.race", "tasks.c3",
                             "tasks.token_classification"))
register = REGISTRY.register
get = REGISTRY.get
names = REGISTRY.names


def option_classes():
    """The distinct options classes of the registered tasks (for the command's flags)."""
    found = []
    for task in REGISTRY.entries().values():
        if task.options_class is not None and task.options_class not in found:
            found.append(task.options_class)
    return found
