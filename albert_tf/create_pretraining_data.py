r"""Writes ALBERT pretraining data: n-gram masked-LM + sentence-order instances.

    python -m albert_tf.create_pretraining_data --input='books/*.txt' \
        --vocab_file=30k-clean.model --output=data/books --input_format=prose \
        [--max_seq_length=512] [--max_predictions_per_seq=20] [--dupe_factor=10] \
        [--random_next_sentence] [--random_seed=12345] [--num_shards=8]

Writes PREFIX-0000i-of-0000N.tfrecord (google-research/albert's record format,
see albert_tf.pretraining.records), streaming the corpus, and prints a summary:
documents, instances, tokens, masked share, the 80/10/10 split and the n-gram
histogram. The sampling is google-research/albert's; --target_length,
--single_sentence and --ngram_placement choose alternatives. The same inputs,
settings and seed give byte-identical files.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags  # noqa: E402

from albert_tf import cli  # noqa: E402
from albert_tf.pretraining.documents import expand_inputs  # noqa: E402
from albert_tf.pretraining.options import DataOptions  # noqa: E402
from albert_tf.pretraining.documents import count_documents  # noqa: E402
from albert_tf.progress import Progress  # noqa: E402
from albert_tf.tokenizer.loading import tokenizer_from  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_list("input", None, "Comma-separated text files or globs (UTF-8).")
flags.DEFINE_string("vocab_file", None,
                    "The vocabulary (e.g. ALBERT's 30k-clean.model), or a local checkpoint "
                    "folder that ships one.")
flags.DEFINE_alias("spm_model", "vocab_file")
flags.DEFINE_string("output", None, "Output prefix: writes PREFIX-0000i-of-0000N.tfrecord.")
cli.define_flags(DataOptions)
flags.DEFINE_boolean("progress", True, "Report progress on stderr.")


def main(argv):
    with cli.user_errors():
        cli.check_arguments(argv, FLAGS, required=("input", "vocab_file", "output"))
        # Everything the user can get wrong is checked before TensorFlow loads.
        options = cli.settings_from_flags(DataOptions, FLAGS)
        files = expand_inputs(FLAGS.input)
        tokenizer = tokenizer_from(FLAGS.vocab_file, host=True)
        documents = count_documents(files, options.input_format) * options.dupe_factor
        cli.load_tensorflow()
        from albert_tf.pretraining import pipeline

        with Progress(documents, "create pretraining data", "documents",
                      enabled=FLAGS.progress) as progress:
            summary = pipeline.create_pretraining_data(files, tokenizer, FLAGS.output,
                                                       options, progress)
    print(f"read {len(files)} file(s) as {FLAGS.input_format}")
    print(summary.format())


if __name__ == "__main__":
    app.run(main)
