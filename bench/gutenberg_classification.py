"""SST-2-sized sentence classification sets from the Gutenberg books, to measure
the from-scratch recipe (README.md, Fine-tuning, From random weights).

Every sentence of 6 to 40 words of each book under --corpus (the project's
sentence splitter, Gutenberg licence text left out) is a row, labelled by the
book it comes from; a sentence found in more than one place is kept once (its
first book), so no text is in both splits. A stratified --dev_rows are the dev
split, the rest (about 37,000 rows for the ten shared books) training:

- OUTPUT/books/{train,dev}.csv: `text,label`, the label the book's file name
  (`text_classification`: which book a sentence is from);
- OUTPUT/SST-2/{train,dev}.tsv: GLUE's SST-2 layout (`sentence<TAB>label`, a
  header row), label 1 for the books of --positive, 0 for the others (`sst2`).

It prints each split's rows and each dev set's majority-class accuracy (the
baseline the runs are compared with). Then, for instance:

    nice -n 10 /usr/bin/time -v python -m albert_tf.finetune --task=text_classification \\
        --train_file=OUTPUT/books/train.csv --eval_file=OUTPUT/books/dev.csv \\
        --model=albert_tiny --vocab_file=30k-clean.model --output_dir=runs/books --seed=1
    nice -n 10 /usr/bin/time -v python -m albert_tf.finetune --task=sst2 --data_dir=OUTPUT/SST-2 \\
        --model=albert_tiny --vocab_file=30k-clean.model --output_dir=runs/sst2 --seed=1
"""

import argparse
import collections
import csv
import glob
import json
import os
import random

from albert_tf.pretraining.documents import read_documents

MIN_WORDS, MAX_WORDS = 6, 40
# Austen, Dickens, Wilde, Carroll, Barrie: about 46% of the rows.
DEFAULT_POSITIVE = "pg1342,pg98,pg174,pg11,pg16"


def book_sentences(paths):
    """[(sentence, book)] for every sentence of MIN_WORDS to MAX_WORDS words, each text once."""
    seen, rows = set(), []
    for path in paths:
        book = os.path.splitext(os.path.basename(path))[0]
        for document in read_documents([path], "prose"):
            for sentence in document:
                sentence = " ".join(sentence.split())
                if MIN_WORDS <= len(sentence.split()) <= MAX_WORDS and sentence not in seen:
                    seen.add(sentence)
                    rows.append((sentence, book))
    return rows


def stratified_split(rows, dev_rows, seed):
    """(train, dev): dev holds each book's share of `dev_rows`, both shuffled."""
    by_book = collections.defaultdict(list)
    for row in rows:
        by_book[row[1]].append(row)
    rng = random.Random(seed)
    train, dev = [], []
    for book in sorted(by_book):
        book_rows = by_book[book]
        rng.shuffle(book_rows)
        cut = round(dev_rows * len(book_rows) / len(rows))
        dev += book_rows[:cut]
        train += book_rows[cut:]
    rng.shuffle(train)
    rng.shuffle(dev)
    return train, dev


def majority(labels):
    return max(collections.Counter(labels).values()) / len(labels)


def write_csv(path, header, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


def write_glue_tsv(path, header, rows):
    """GLUE's TSV: tab-separated, no quoting (the texts hold no tab or newline:
    book_sentences joined their words with single spaces)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for row in [header, *rows]:
            f.write("\t".join(str(field) for field in row) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="../shared/data/corpus/gutenberg")
    parser.add_argument("--output", required=True)
    parser.add_argument("--dev_rows", type=int, default=2000)
    parser.add_argument("--positive", default=DEFAULT_POSITIVE,
                        help="comma-separated book names labelled 1 in the SST-2 layout")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    paths = sorted(glob.glob(os.path.join(args.corpus, "*.txt")))
    if not paths:
        parser.error(f"no .txt file in --corpus={args.corpus}")
    train, dev = stratified_split(book_sentences(paths), args.dev_rows, args.seed)
    positive = set(args.positive.split(","))
    write_csv(os.path.join(args.output, "books", "train.csv"), ("text", "label"), train)
    write_csv(os.path.join(args.output, "books", "dev.csv"), ("text", "label"), dev)
    binary = {split: [(text, int(book in positive)) for text, book in rows]
              for split, rows in (("train", train), ("dev", dev))}
    for split, rows in binary.items():
        write_glue_tsv(os.path.join(args.output, "SST-2", f"{split}.tsv"),
                       ("sentence", "label"), rows)
    print(json.dumps({
        "train_rows": len(train), "dev_rows": len(dev),
        "books": sorted({book for _, book in train}),
        "books_dev_majority": round(majority([b for _, b in dev]), 4),
        "sst2_positive": sorted(positive),
        "sst2_train_positive_share": round(sum(l for _, l in binary["train"]) / len(train), 4),
        "sst2_dev_majority": round(majority([l for _, l in binary["dev"]]), 4),
    }, indent=1))


if __name__ == "__main__":
    main()
