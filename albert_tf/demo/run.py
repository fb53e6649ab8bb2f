"""The fine-tuning run of `--demo`.

The demo trains a small ALBERT from random weights on purpose (it runs
offline, where no pretrained checkpoint can be fetched, in a few minutes on a
CPU), so the warning meant for a run whose `--init_checkpoint` was forgotten
would read wrong: `describe` says what the demo trains instead.
"""

from albert_tf.config import AlbertConfig
from albert_tf.training.finetuning import Run


class DemoRun(Run):
    """A `Run` without the from-scratch warning (the demo says so itself)."""

    warns_from_scratch = False


def describe(task_name, settings):
    """The line a demo run starts with: its model, its data, and why it has no
    pretrained checkpoint (`settings`: the run's `FinetuneSettings`)."""
    config = AlbertConfig.from_json_file(settings.model)
    return (f"demo: a small ALBERT ({config.num_layers} shared layers, hidden size "
            f"{config.hidden_dim}) trained from random weights on generated {task_name} data; "
            "no pretrained checkpoint, on purpose (the demo runs offline). A real task "
            "starts from one: --init_checkpoint=albert_base_v2, or a local folder")
