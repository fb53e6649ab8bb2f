"""Padded tokens of one MRPC epoch under each batching and length bucketing.

    python bench/length_buckets.py [--data_dir=../shared/data/glue/MRPC] [--max_seq_length=128]

The work of an epoch grows with the tokens its batches are padded to; XLA
compiles once per batch shape. For random and length-aware batches (as
`finetune` plans them, batch 32, one epoch) and for each padding rule
(multiples of 8 without XLA, `albert_tf.data.bucket_lengths` with XLA, the
earlier 64/128 buckets, padding to the maximum), prints the tokens saved
against padding every batch to --max_seq_length and the number of shapes.
"""

import argparse
import csv
import os

from common import ROOT, emit, table


def pair_lengths(data_dir, vocab, max_length):
    import numpy as np

    from albert_tf.tokenizer.loading import load_tokenizer

    tokenizer = load_tokenizer(vocab, host=True)
    with open(os.path.join(data_dir, "train.tsv"), encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    a = tokenizer.encode_batch([r[3] for r in rows])
    b = tokenizer.encode_batch([r[4] for r in rows])
    return np.minimum(max_length, [len(x) + len(y) + 3 for x, y in zip(a, b)])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data_dir", default=os.path.join(ROOT, "..", "shared", "data", "glue",
                                                           "MRPC"))
    parser.add_argument("--vocab_file", default=os.path.join(
        ROOT, "tests", "fixtures", "spm", "albert_30k_clean.model"))
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=32)
    args = parser.parse_args()
    from albert_tf.data import bucket_lengths, padded_length, train_batches

    lengths = pair_lengths(args.data_dir, args.vocab_file, args.max_seq_length)
    steps = -(-len(lengths) // args.batch_size)
    rules = {"multiple_of_8": {}, "xla_buckets": {"buckets": bucket_lengths(args.max_seq_length)},
             "buckets_64_128": {"buckets": [64, 128]},
             "max_seq_length": {"buckets": [args.max_seq_length]}}
    rows = []
    for length_aware in (False, True):
        batches = train_batches(lengths, args.batch_size, steps, seed=12345,
                                length_aware=length_aware)
        for rule, options in rules.items():
            widths = [padded_length(lengths[b], args.max_seq_length, **options) for b in batches]
            rows.append({"batches": "length_aware" if length_aware else "random", "padding": rule,
                         "tokens_saved_vs_fixed": round(args.max_seq_length * len(widths)
                                                        / sum(widths), 2),
                         "shapes": len(set(widths))})
    print(f"{len(lengths)} examples, mean length {lengths.mean():.1f}; xla buckets "
          f"{bucket_lengths(args.max_seq_length)}")
    print(table(rows, list(rows[0])))
    emit({"length_buckets": rows})


if __name__ == "__main__":
    main()
