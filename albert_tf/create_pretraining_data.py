r"""Writes ALBERT pretraining data: n-gram masked-LM + sentence-order instances.

    python -m albert_tf.create_pretraining_data --input='books/*.txt' \
        --spm_model=30k-clean.model --output=data/books --input_format=prose \
        [--max_seq_length=512] [--max_predictions_per_seq=20] [--dupe_factor=10] \
        [--random_next_sentence] [--random_seed=12345] [--num_shards=8]

Writes PREFIX-0000i-of-0000N.tfrecord (format: albert_tf.pretraining.records),
streaming the corpus, and prints a summary: documents, instances, tokens,
masked share, the 80/10/10 split and the n-gram histogram. The same inputs,
settings and seed give byte-identical files.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags  # noqa: E402

from albert_tf import cli  # noqa: E402
from albert_tf.pretraining.documents import INPUT_FORMATS, expand_inputs  # noqa: E402
from albert_tf.pretraining.options import DataOptions  # noqa: E402
from albert_tf.pretraining.progress import Progress  # noqa: E402
from albert_tf.tokenizer.host import HostTokenizer  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_list("input", None, "Comma-separated text files or globs (UTF-8).")
flags.DEFINE_string("spm_model", None, "The SentencePiece model (e.g. 30k-clean.model).")
flags.DEFINE_string("output", None, "Output prefix: writes PREFIX-0000i-of-0000N.tfrecord.")
flags.DEFINE_enum("input_format", "lines", INPUT_FORMATS,
                  "lines: one sentence per line, blank line between documents (the "
                  "reference's format); prose: plain text (e.g. Gutenberg books), "
                  "paragraphs split into sentences, a document per chapter.")
flags.DEFINE_integer("max_seq_length", 512, "Tokens per instance, [CLS]/[SEP] included.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Most masked tokens per instance.")
flags.DEFINE_float("masked_lm_prob", 0.15, "Share of tokens to mask (before the cap).")
flags.DEFINE_integer("max_ngram", 3, "Longest masked span in words; p(n) ~ 1/n.")
flags.DEFINE_integer("dupe_factor", 10, "Passes over the corpus, each with new masks.")
flags.DEFINE_float("short_seq_prob", 0.1, "Probability of a shorter target length.")
flags.DEFINE_boolean("random_next_sentence", False,
                     "NSP-style negatives (B from another document) instead of SOP swaps.")
flags.DEFINE_integer("random_seed", 12345, "Seed of every random choice.")
flags.DEFINE_integer("num_shards", 1, "Output files (records go round-robin).")
flags.DEFINE_integer("document_window", 100,
                     "Documents held at once: read ahead (taken in random order) and the "
                     "source of random documents.")
flags.DEFINE_integer("shuffle_buffer", 10_000, "Records shuffled before writing.")
flags.DEFINE_boolean("progress", True, "Report progress on stderr.")

_OPTION_FLAGS = ("input_format", "max_seq_length", "max_predictions_per_seq", "masked_lm_prob",
                 "max_ngram", "dupe_factor", "short_seq_prob", "random_next_sentence",
                 "random_seed", "num_shards", "document_window", "shuffle_buffer")


def main(argv):
    with cli.user_errors():
        cli.check_arguments(argv, FLAGS, required=("input", "spm_model", "output"))
        # Everything the user can get wrong is checked before TensorFlow loads.
        options = DataOptions(**{name: FLAGS[name].value for name in _OPTION_FLAGS})
        files = expand_inputs(FLAGS.input)
        tokenizer = HostTokenizer(FLAGS.spm_model)
        from albert_tf.pretraining import pipeline  # imports TensorFlow
        progress = Progress() if FLAGS.progress else None
        summary = pipeline.create_pretraining_data(files, tokenizer, FLAGS.output, options,
                                                   progress)
        if progress is not None:
            progress.close()
    print(f"read {len(files)} file(s) as {FLAGS.input_format}")
    print(summary.format())


if __name__ == "__main__":
    app.run(main)
