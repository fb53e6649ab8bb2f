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


def option_classes():
    """The distinct options classes of the registered tasks (for the command's flags)."""
    found = []
    for task in REGISTRY.entries().values():
        if task.options_class is not None and task.options_class not in found:
            found.append(task.options_class)
    return found


def data_sources():
    """`{task name: albert_tf.datasets.DataSource}` of the tasks with a public data set
    (what `albert-tf download --dataset` fetches)."""
    return {name: task.data_source for name, task in REGISTRY.entries().items()
            if task.data_source is not None}
