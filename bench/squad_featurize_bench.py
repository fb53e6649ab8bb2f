"""How fast `tasks.squad.data.featurize` is, on a synthetic SQuAD-shaped set.

    python bench/squad_featurize_bench.py [--num_questions=2000] [--seed=0]
        [--against=OTHER/tasks/squad/data.py --repeats=3 [--windows_only]]

Paragraphs are runs of the real sentences in
tests/fixtures/spm/tokenization_reference.jsonl, about SQuAD v1.1 train's
shape: 4.6 questions per paragraph (87,599 over 18,896), ~700 characters a
paragraph with a long tail (3% of 2,000-3,500 characters, several windows).
Questions are 6-14 words of another sentence; answers 1-4 words of the
paragraph. Prints questions/s and windows/s, and the time for the 87,599
questions of SQuAD v1.1 train at that rate (one process).

`--against` times another checkout's `featurize` (its `tasks/squad/data.py`,
imported by path; the rest of the package is this tree's) against this one,
interleaved A, B, A, B, ... in one process, in CPU time (all threads), checks
that both give the same features, and prints the ratio of the medians;
`--windows_only` tokenizes each text once beforehand, so that the times are
those of the windows, labels and arrays alone.
"""

import argparse
import importlib.util
import json
import os
import resource
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from albert_tf.tokenizer import HostTokenizer  # noqa: E402
from albert_tf.tasks.squad.data import SquadExample, featurize  # noqa: E402

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "spm")
SQUAD_TRAIN_QUESTIONS = 87_599
QUESTIONS_PER_PARAGRAPH = 87_599 / 18_896


def _paragraph(sentences, rng):
    """Consecutive sentences up to a SQuAD-like length (characters)."""
    target = max(150, rng.normal(700, 250) if rng.random() > 0.03 else rng.uniform(2000, 3500))
    start, text = int(rng.integers(len(sentences))), ""
    while len(text) < target:
        text = (text + " " + sentences[start % len(sentences)]).strip()
        start += 1
    return text[:text.rfind(" ", 0, int(target)) + 1 or len(text)].strip()


def synthetic_examples(sentences, num_questions, rng):
    """`num_questions` answerable `SquadExample`s, ~4.6 to a paragraph."""
    examples = []
    while len(examples) < num_questions:
        context = _paragraph(sentences, rng)
        words = [(m, m + len(w)) for m, w in _word_spans(context)]
        for _ in range(max(1, rng.poisson(QUESTIONS_PER_PARAGRAPH))):
            first = int(rng.integers(len(words)))
            last = min(len(words) - 1, first + int(rng.integers(4)))
            asked = sentences[int(rng.integers(len(sentences)))].split()
            question = " ".join(asked[:int(rng.integers(6, 15))]) + "?"
            answer = context[words[first][0]:words[last][1]]
            examples.append(SquadExample(f"q{len(examples)}", question, context,
                                         ((answer, words[first][0]),)))
    return examples[:num_questions]


def _word_spans(text):
    position = 0
    for word in text.split():
        position = text.index(word, position)
        yield position, word
        position += len(word)


def _cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _same_features(a, b):
    """Whether two `(features, windows)` are equal: every array, dtype, row order."""
    (fa, wa), (fb, wb) = a, b
    return (list(fa.arrays) == list(fb.arrays) and wa == wb and fa.label_keys == fb.label_keys
            and all(fa.arrays[k].dtype == fb.arrays[k].dtype
                    and np.array_equal(fa.arrays[k], fb.arrays[k]) for k in fa.arrays)
            and fa.lengths.dtype == fb.lengths.dtype and np.array_equal(fa.lengths, fb.lengths))


class _Memo:
    """A tokenizer that answers each text's ids (and offsets) from a cache."""

    def __init__(self, tokenizer):
        self._tokenizer, self._offsets, self._batches = tokenizer, {}, {}
        self.pad_id, self.cls_id, self.sep_id = (tokenizer.pad_id, tokenizer.cls_id,
                                                 tokenizer.sep_id)

    def encode_with_offsets(self, text):
        if text not in self._offsets:
            self._offsets[text] = self._tokenizer.encode_with_offsets(text)
        return self._offsets[text]

    def encode_batch(self, texts):
        key = tuple(texts)
        if key not in self._batches:
            self._batches[key] = self._tokenizer.encode_batch(texts)
        return self._batches[key]


def compare(path, examples, tokenizer, repeats, **options):
    """CPU seconds of `featurize` from the data.py at `path` (A) and this tree's (B),
    interleaved; raises if their features differ."""
    spec = importlib.util.spec_from_file_location("other_squad_data", path)
    other = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(other)
    seconds = {"A": [], "B": []}
    for _ in range(repeats):
        for name, run in (("A", other.featurize), ("B", featurize)):
            begin = _cpu_seconds()
            result = run(examples, tokenizer, **options)
            seconds[name].append(_cpu_seconds() - begin)
            if name == "A":
                expected = result
            elif not _same_features(expected, result):
                raise SystemExit(f"the features differ from those of {path}")
    for name, values in seconds.items():
        print(f"{name} CPU s: " + ", ".join(f"{v:.2f}" for v in values))
    print(f"B / A (medians): {np.median(seconds['B']) / np.median(seconds['A']):.3f}; "
          "features equal")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num_questions", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max_seq_length", type=int, default=384)
    parser.add_argument("--doc_stride", type=int, default=128)
    parser.add_argument("--against", help="another checkout's tasks/squad/data.py to time "
                                          "against this one")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--windows_only", action="store_true",
                        help="with --against: tokenize beforehand, time the rest")
    args = parser.parse_args(argv)
    with open(os.path.join(FIXTURES, "tokenization_reference.jsonl"), encoding="utf-8") as f:
        sentences = [json.loads(line)["text"] for line in f]
    tokenizer = HostTokenizer(os.path.join(FIXTURES, "albert_30k_clean.model"))
    examples = synthetic_examples(sentences, args.num_questions, np.random.default_rng(args.seed))
    contexts = sorted({e.context for e in examples})
    begin = time.perf_counter()
    tokenizer.encode_with_offsets("Warm-up: the first call builds the normalization tables.")
    print(f"one-time tokenizer tables: {time.perf_counter() - begin:.2f} s")
    if args.against:
        if args.windows_only:
            tokenizer = _Memo(tokenizer)
            featurize(examples, tokenizer)  # fills the cache
        featurize(examples[:10], tokenizer)  # one-time imports and first calls
        compare(args.against, examples, tokenizer, args.repeats, is_training=True,
                max_seq_length=args.max_seq_length, doc_stride=args.doc_stride)
        return
    begin = time.perf_counter()
    features, windows = featurize(examples, tokenizer, max_seq_length=args.max_seq_length,
                                  doc_stride=args.doc_stride, is_training=True)
    seconds = time.perf_counter() - begin
    begin = time.perf_counter()
    for context in contexts:
        tokenizer.encode_with_offsets(context)
    tokenizing = time.perf_counter() - begin
    rate = len(examples) / seconds
    print(f"{len(examples)} questions, {len(contexts)} paragraphs "
          f"(mean {np.mean([len(c) for c in contexts]):.0f} characters), {len(windows)} windows")
    print(f"featurize: {seconds:.2f} s = {rate:,.0f} questions/s, "
          f"{len(windows) / seconds:,.0f} windows/s; tokenizing the paragraphs with offsets "
          f"is {tokenizing:.2f} s of it")
    print(f"SQuAD v1.1 train ({SQUAD_TRAIN_QUESTIONS:,} questions) at this rate: "
          f"{SQUAD_TRAIN_QUESTIONS / rate:,.0f} s")


if __name__ == "__main__":
    main()
