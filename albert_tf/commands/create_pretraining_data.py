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

from albert_tf.commands import cli  # noqa: E402
from albert_tf.commands.program import Flags, Program  # noqa: E402
from albert_tf.pretraining.documents import count_documents, expand_inputs  # noqa: E402
from albert_tf.pretraining.options import DataFiles, DataOptions  # noqa: E402
from albert_tf.progress import Progress  # noqa: E402
from albert_tf.tokenizer.loading import load_tokenizer  # noqa: E402


def run(paths, options):
    # Everything the user can get wrong is checked before TensorFlow loads.
    files = expand_inputs(paths.input)
    tokenizer = load_tokenizer(paths.vocab_file, host=True)
    documents = count_documents(files, options.input_format) * options.dupe_factor
    cli.load_tensorflow()
    from albert_tf.pretraining import pipeline

    with Progress(documents, "create pretraining data", "documents",
                  enabled=paths.progress) as progress:
        summary = pipeline.create_pretraining_data(files, tokenizer, paths.output, options,
                                                   progress)
    print(f"read {len(files)} file(s) as {options.input_format}")
    print(summary.format())


PROGRAM = Program("create_pretraining_data", run, Flags(DataFiles), Flags(DataOptions),
                  quiet=False)
