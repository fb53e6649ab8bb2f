r"""Downloads fine-tuning data sets and published checkpoints.

    python -m albert_tf.download --dataset=rte,squad_v2 --output_dir=data
    python -m albert_tf.download --checkpoint=albert_base_v2

Data sets go to `<output_dir>/glue/RTE`, `<output_dir>/squad`, `<output_dir>/clue/afqmc`,
... (pass that folder as `finetune --data_dir`); checkpoints into the cache
(`$ALBERT_TF_CACHE`, default ~/.cache/albert_tf), where `--init_checkpoint=NAME`
finds them. Prints one folder per line. Sources: `albert_tf/datasets.py`.
"""

from absl import app, flags

from albert_tf import cli

FLAGS = flags.FLAGS
flags.DEFINE_list("dataset", [], "Data sets by task name (rte, mnli, squad_v2, afqmc, "
                  "cmrc2018, ...).")
flags.DEFINE_list("checkpoint", [], "Published checkpoints (albert_base_v2, "
                  "hf:albert/albert-large-v2, google:albert_base_zh, ...).")
flags.DEFINE_string("output_dir", "data", "Where data sets go.")


def main(argv):
    from albert_tf.datasets import SOURCES, fetch_dataset

    with cli.user_errors():
        cli.check_arguments(argv, FLAGS)
        if not FLAGS.dataset and not FLAGS.checkpoint:
            raise ValueError("nothing to download: give --dataset (known: "
                             f"{', '.join(sorted(SOURCES))}) or --checkpoint")
        unknown = sorted(set(FLAGS.dataset) - set(SOURCES))
        if unknown:
            raise ValueError(f"unknown data set(s) {', '.join(unknown)}; known: "
                             f"{', '.join(sorted(SOURCES))}")
        for name in FLAGS.dataset:
            print(fetch_dataset(name, FLAGS.output_dir), flush=True)
        if FLAGS.checkpoint:
            cli.load_tensorflow()  # the checkpoints package imports it: without its noise
            from albert_tf.checkpoints import download

            for name in FLAGS.checkpoint:
                print(download.resolve(name), flush=True)


if __name__ == "__main__":
    app.run(main)
