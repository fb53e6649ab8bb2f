r"""Downloads fine-tuning data sets and published checkpoints.

    python -m albert_tf.download --dataset=rte,squad_v2 --output_dir=data
    python -m albert_tf.download --checkpoint=albert_base_v2

Data sets go to `<output_dir>/glue/RTE`, `<output_dir>/squad`, `<output_dir>/clue/afqmc`,
... (pass that folder as `finetune --data_dir`); checkpoints into the cache
(`$ALBERT_TF_CACHE`, default ~/.cache/albert_tf), where `--init_checkpoint=NAME`
finds them. Prints one folder per line. Sources: each task's `data_source`
(GLUE's and CLUE's in their spec rows), fetched by `albert_tf/datasets.py`.
"""

from albert_tf.commands import cli
from albert_tf.commands.program import Flags, Program
from albert_tf.datasets import DownloadSettings, fetch_dataset, unknown_datasets


def run(settings):
    if settings.dataset:
        from albert_tf import tasks  # each task's declaration says where its data comes from

        sources = tasks.data_sources()
        unknown_datasets(settings.dataset, sources)
        for name in settings.dataset:
            print(fetch_dataset(sources[name], settings.output_dir), flush=True)
    if settings.checkpoint:
        cli.load_tensorflow()  # the checkpoints package imports it: without its noise
        from albert_tf.checkpoints import download

        for name in settings.checkpoint:
            print(download.resolve(name), flush=True)


PROGRAM = Program("download", run, Flags(DownloadSettings), quiet=False)
