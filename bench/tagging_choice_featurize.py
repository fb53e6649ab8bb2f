"""CPU time of token classification and multiple-choice featurization, for
one or more checkouts, measured interleaved (A, B, A, B, ...), with their
features compared.

    python bench/tagging_choice_featurize.py --trees=OLD,NEW [--rounds=3]

Sets (they need ../shared, see its README):
- `ner`: the first 10,000 CLUENER2020 training texts, the Chinese WordPiece
  vocabulary, 128 tokens; featurization (`token_features.featurize`), then
  the prediction files' path: the encoded examples, and the entities
  (`char_entities`) of the gold word tags (CLUENER's density, 2.5 a text)
  and of seeded random ones (about 32 a text).
- `c3`: C3's 3,892 test questions repeated to 5,000 (2-4 choices), WordPiece,
  512 tokens, `max_qa_length` 128.
- `race`: 5,000 RACE-like questions x 4 choices made of the English
  reference paragraphs (tests/fixtures/spm), half with a blank, SentencePiece,
  512 tokens, `max_qa_length` 128, `fill_blank`.

Each measurement is one subprocess with the tree on its PYTHONPATH; it
reports `time.process_time()` around the measured call only. Prints, per
set, each tree's CPU seconds (median of the rounds) and the ratio to the
first tree's, and whether the outputs equal the first tree's.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
SETS = ("ner", "c3", "race")


def _ner(out):
    import numpy as np

    from albert_tf.tasks.token_classification import tagging, token_data, token_features
    from albert_tf.tokenizer.loading import load_tokenizer

    tokenizer = load_tokenizer(os.path.join(FIXTURES, "wordpiece", "vocab.txt"), host=True)
    path = os.path.join(SHARED, "data", "ner", "cluener2020", "train.json")
    examples = token_data.read_file(path, "auto", True)[:10_000]
    tags = tagging.tag_list({e.type for x in examples for e in x.entities}, "iob2")
    start = _cpu()
    features = token_features.featurize(examples, tokenizer, 128, tags, labelled=True)
    featurize = _cpu() - start
    start = _cpu()
    new = hasattr(token_features, "encode_all")
    if new:
        encoded = token_features.encode_all(examples, tokenizer, "iob2")
    else:
        encoded = [token_features.encode(x, tokenizer, "iob2") for x in examples]
    times = {"featurize": featurize, "encode": _cpu() - start}
    rng = np.random.default_rng(0)
    random_tags = [[tags[k] for k in rng.integers(0, len(tags), len(e.spans))]
                   for e in encoded]
    entities = []
    for name, predicted in (("gold", [e.tags for e in encoded]), ("random", random_tags)):
        start = _cpu()
        if new:
            entities.append(token_features.char_entities(
                [x.text for x in examples], [e.spans for e in encoded], predicted, tags))
        else:
            entities.append([token_features.char_entities(p, e.spans, x.text)
                             for p, e, x in zip(predicted, encoded, examples)])
        times[f"entities_of_{name}_tags"] = _cpu() - start
    np.savez(out, lengths=features.lengths, **features.arrays)
    with open(out + ".json", "w", encoding="utf-8") as f:
        json.dump({"entities": entities, "spans": [e.spans for e in encoded],
                   "token_word": [e.token_word for e in encoded]}, f)
    return times


def _race_examples(count):
    import numpy as np

    from albert_tf.tasks.multiple_choice import ChoiceExample

    with open(os.path.join(FIXTURES, "spm", "tokenization_reference.jsonl"),
              encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f]
    rng = np.random.default_rng(0)
    examples = []
    for i in range(count):
        first = int(rng.integers(len(texts)))
        context = " ".join(texts[first:first + int(rng.integers(2, 12))])
        words = texts[int(rng.integers(len(texts)))].split()[:20]
        if i % 2:
            words[int(rng.integers(len(words)))] = "_"
        choices = tuple(" ".join(rng.choice(context.split(), int(rng.integers(1, 6))))
                        for _ in range(4))
        examples.append(ChoiceExample(str(i), context, " ".join(words), choices, 0))
    return examples


def _choices(name, out):
    import numpy as np

    from albert_tf.tasks.multiple_choice.c3 import read_c3
    from albert_tf.tasks.multiple_choice import encode_choices
    from albert_tf.tokenizer.loading import load_tokenizer

    if name == "c3":
        examples = read_c3(os.path.join(SHARED, "data", "mc", "c3"), "test")
        examples = (examples * 2)[:5_000]
        vocabulary, fill_blank = os.path.join(FIXTURES, "wordpiece", "vocab.txt"), False
    else:
        examples = _race_examples(5_000)
        vocabulary, fill_blank = os.path.join(FIXTURES, "spm", "albert_30k_clean.model"), True
    tokenizer = load_tokenizer(vocabulary, host=True)
    start = _cpu()
    arrays, lengths = encode_choices(examples, tokenizer, 512, 128, fill_blank)
    featurize = _cpu() - start
    np.savez(out, lengths=lengths, **arrays)
    return {"featurize": featurize}


def _cpu():
    import time

    return time.process_time()


def _child(name, out):
    result = _ner(out) if name == "ner" else _choices(name, out)
    print(json.dumps(result))


def _measure(tree, name, out):
    env = dict(os.environ, PYTHONPATH=tree, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name,
                             "--out", out], env=env, capture_output=True, text=True,
                            cwd=tree, check=False)
    if result.returncode:
        raise SystemExit(f"{tree} {name}: {result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _same(first, other):
    import numpy as np

    a, b = np.load(first), np.load(other)
    same = sorted(a.files) == sorted(b.files) and all(
        a[k].shape == b[k].shape and a[k].dtype == b[k].dtype and (a[k] == b[k]).all()
        for k in a.files)
    if os.path.exists(first + ".json"):
        with open(first + ".json", encoding="utf-8") as f, \
                open(other + ".json", encoding="utf-8") as g:
            same = same and json.load(f) == json.load(g)
    return same


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trees", default=ROOT, help="comma-separated checkouts")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.child:
        return _child(args.child, args.out)
    trees = args.trees.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sets.split(","):
            times = {}
            for r in range(args.rounds):
                for t, tree in enumerate(trees):
                    for key, seconds in _measure(tree, name,
                                                 os.path.join(tmp, f"{name}-{t}.npz")).items():
                        times.setdefault(key, {}).setdefault(t, []).append(seconds)
            for key, per_tree in times.items():
                base = statistics.median(per_tree[0])
                row = [f"{name} {key}:"]
                for t, values in per_tree.items():
                    median = statistics.median(values)
                    row.append(f"tree {t} {median:.2f} s CPU ({median / base:.2f}x; "
                               f"{', '.join(f'{v:.2f}' for v in values)})")
                print(" ".join(row), flush=True)
            for t in range(1, len(trees)):
                print(f"{name}: tree {t} outputs equal tree 0's:",
                      _same(os.path.join(tmp, f"{name}-0.npz"),
                            os.path.join(tmp, f"{name}-{t}.npz")), flush=True)


if __name__ == "__main__":
    main()
