"""Raw text -> masked-LM + SOP instances -> TFRecord shards, streamed.

The corpus is read `dupe_factor` times (each pass draws new segment cuts and
new masks), one document at a time. At any moment memory holds a window of
`document_window` documents read ahead (processed in random order) plus the
last `document_window` processed (together the source of random segments B:
NSP negatives and single-sentence chunks), and `shuffle_buffer` serialized
records waiting to be written. So the corpus may be far larger than memory;
the window and the buffer bound what is held.

The reference (google-research/albert `create_pretraining_data.py`) instead
loads every document, shuffles all of them, builds every instance of every
pass in memory and shuffles those. The streamed version shuffles locally:
documents within the window, records within the buffer; the reader shuffles
again. Passes are still a whole corpus apart, as in the reference, so the
copies of one document with different masks rarely meet in a batch.

Everything random comes from one `numpy.random.Generator` seeded with
`random_seed`, so the same inputs, settings and seed give byte-identical
files (with the same numpy version: numpy does not promise its generator
methods' streams across versions).
"""

import collections
import time

import numpy as np

from albert_tf.pretraining import records as records_lib
from albert_tf.pretraining import writer as writer_lib
from albert_tf.pretraining.documents import read_documents, tokenize_document
from albert_tf.pretraining.instances import RANDOM_B, document_instances
from albert_tf.pretraining.masking import VocabularyTables
from albert_tf.pretraining.summary import Summary


def windowed(documents, window, rng):
    """Yields `(document, others)` with documents in a locally random order.

    Up to `window` documents are read ahead; each step takes a random one.
    `others` (for NSP negatives) is the rest of the read-ahead plus up to
    `window` documents taken before, never the document itself.
    """
    pool, recent = [], collections.deque(maxlen=window)

    def take():
        i = int(rng.integers(len(pool)))
        pool[i], pool[-1] = pool[-1], pool[i]
        document = pool.pop()
        others = pool + list(recent)
        recent.append(document)
        return document, others

    for document in documents:
        pool.append(document)
        if len(pool) >= window:
            yield take()
    while pool:
        yield take()


def shuffled(items, buffer_size, rng):
    """`items` in a random order that only mixes within `buffer_size` (streamed)."""
    buffer = []
    for item in items:
        if len(buffer) < buffer_size:
            buffer.append(item)
            continue
        i = int(rng.integers(buffer_size))
        yield buffer[i]
        buffer[i] = item
    for i in rng.permutation(len(buffer)):
        yield buffer[i]


def _tokenized_documents(input_files, tokenizer, input_format, word_marks):
    for sentences in read_documents(input_files, input_format):
        document = tokenize_document(tokenizer, sentences, word_marks)
        if document is not None:
            yield document


def _serialized_instances(input_files, tokenizer, tables, options, rng, summary, progress,
                          word_marks):
    """Yields every record, pass after pass, counting into `summary`."""
    instance_options = options.instance_options()
    for _ in range(options.dupe_factor):
        summary.passes += 1
        documents = _tokenized_documents(input_files, tokenizer, options.input_format,
                                         word_marks)
        for document, others in windowed(documents, options.document_window, rng):
            for instance in document_instances(document, rng, tables, instance_options, others):
                summary.add(instance, tables.mask_id)
                yield records_lib.serialize_instance(instance, options.max_seq_length,
                                                     options.max_predictions_per_seq)
            summary.documents += 1
            if progress is not None:
                progress.update(1)


def create_pretraining_data(input_files, tokenizer, output_prefix, options, progress=None):
    """Writes the pretraining records of `input_files` to TFRecord shards.

    Args:
        input_files: text files in `options.input_format` (see `documents`).
        tokenizer: `albert_tf.tokenizer.HostTokenizer`.
        output_prefix: shards go to `PREFIX-0000i-of-0000N.tfrecord`
            (`writer.shard_paths`); each appears only once complete.
        options: `options.DataOptions`.
        progress: optional `albert_tf.progress.Progress`, advanced by one per
            document of each pass.

    Returns:
        `summary.Summary` of what was written.
    """
    start = time.monotonic()
    rng = np.random.default_rng(options.random_seed)
    tables = VocabularyTables.from_tokenizer(tokenizer)
    word_marks = options.word_marks(tokenizer)  # (its mistakes before any record)
    summary = Summary(max_ngram=options.max_ngram, nsp=options.random_next_sentence,
                      random_singles=options.single_sentence == RANDOM_B,
                      whole_words=word_marks is not None)
    stream = _serialized_instances(input_files, tokenizer, tables, options, rng, summary,
                                   progress, word_marks)
    with writer_lib.ShardedWriter(output_prefix, options.num_shards) as writer:
        for record in shuffled(stream, options.shuffle_buffer, rng):
            writer.write(record)
    summary.files, summary.counts = tuple(writer.paths), tuple(writer.counts)
    summary.other_shards = tuple(writer_lib.other_shards(output_prefix, writer.paths))
    summary.seconds = time.monotonic() - start
    return summary
