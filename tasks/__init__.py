"""The task registry: `tasks.get(name)`.

A task supplies its reader, head, loss, metrics, post-processing, serving
module and default recipe (`tasks.base.Task`). The task modules are imported
on the first lookup, so that the registry is always complete, while light
tools such as `tasks.squad_eval` start without importing TensorFlow.
"""

from albert_tf.registry import Registry

REGISTRY = Registry("task", ("tasks.classification", "tasks.squad", "tasks.clue",
                             "tasks.cmrc2018", "tasks.text_classification",
                             "tasks.multiple_choice", "tasks.race", "tasks.c3",
                             "tasks.token_classification"))
register = REGISTRY.register
get = REGISTRY.get
names = REGISTRY.names


def option_classes(kind="options_class"):
    """The distinct options classes of the registered tasks (for the command's flags);
    kind="export_options_class": those of their exports (the export command's)."""
    found = []
    for task in REGISTRY.entries().values():
        options = getattr(task, kind)
        if options is not None and options not in found:
            found.append(options)
    return found


def export_option_classes():
    """The distinct export options classes of the registered tasks."""
    return option_classes("export_options_class")
