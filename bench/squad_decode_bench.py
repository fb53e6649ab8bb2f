"""How fast SQuAD evaluation decodes, against another checkout's `decode_spans`.

    python bench/squad_decode_bench.py --other=/path/to/checkout [--num_questions=9000]
        [--repeats=3] [--seed=0]

Featurizes `squad_featurize_bench`'s synthetic SQuAD-shaped questions
(windows of 384 tokens, ~1.1 a question), draws random outputs for both
heads (span logits; a beam of 5 x 5 from random logits, masked as the
models mask them), then runs this checkout's
`tasks.squad.postprocess.decode_spans` and the other checkout's,
interleaved (A, B, A, B, ...), in this one process. Prints the CPU time
(all threads, `time.process_time`) and wall time of each and their ratio,
and how their predictions, n-best lists and null odds compare.
"""

import argparse
import importlib.util
import json
import math
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

from squad_featurize_bench import FIXTURES, synthetic_examples  # noqa: E402

from albert_tf.tasks.squad import postprocess  # noqa: E402
from albert_tf.tasks.squad.data import featurize  # noqa: E402
from albert_tf.tokenizer import HostTokenizer  # noqa: E402

NEG = -1e30  # the models' masked logit (models/question_answering.py)


def _other_postprocess(checkout):
    """The other checkout's postprocess module (its own imports resolve here)."""
    path = os.path.join(checkout, "tasks", "squad", "postprocess.py")
    spec = importlib.util.spec_from_file_location("other_postprocess", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _log_softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def random_outputs(p_mask, rng, k=5, e=5):
    """`{"span": ..., "beam": ...}` outputs of random models on windows with `p_mask`."""
    n, length = p_mask.shape
    masked = lambda x: np.where(p_mask == 1, NEG, x).astype(np.float32)  # noqa: E731
    span = {"start_logits": masked(rng.normal(0, 2, (n, length))),
            "end_logits": masked(rng.normal(0, 2, (n, length)))}
    start = _log_softmax(masked(rng.normal(0, 2, (n, length))))
    start_index = np.argsort(-start, axis=1, kind="stable")[:, :k]
    end = _log_softmax(np.where(p_mask[:, None] == 1, NEG, rng.normal(0, 2, (n, k, length))))
    end_index = np.argsort(-end, axis=2, kind="stable")[:, :, :e]
    beam = {"start_top_index": start_index.astype(np.int32),
            "start_top_log_probs": np.take_along_axis(start, start_index, 1).astype(np.float32),
            "end_top_index": end_index.reshape(n, k * e).astype(np.int32),
            "end_top_log_probs": np.take_along_axis(end, end_index, 2).reshape(n, k * e)
            .astype(np.float32),
            "cls_logits": rng.normal(0, 2, n).astype(np.float32)}
    return {"span": span, "beam": beam}


def _same_entries(x, y):
    close = lambda u, v: math.isclose(u, v, rel_tol=1e-9, abs_tol=1e-9)  # noqa: E731
    return len(x) == len(y) and all(
        a.keys() == b.keys() and all(a[k] == b[k] if isinstance(a[k], (str, int))
                                     else close(a[k], b[k]) for k in a) for a, b in zip(x, y))


def compare(this, other):
    """A line saying how two `decode_spans` results differ."""
    differing = [q for q in this[1] if not _same_entries(this[1][q], other[1][q])]
    contained = sum({e["text"] for e in other[1][q]} <= {e["text"] for e in this[1][q]}
                    for q in differing)
    odds = max((abs(this[2][q] - other[2][q]) for q in this[2]), default=0.0)
    return (f"predictions {'equal' if this[0] == other[0] else 'DIFFER'}; n-best equal on "
            f"{len(this[1]) - len(differing)} of {len(this[1])} questions (of the others, "
            f"{contained} hold every text of the other's list); null odds within {odds:.1e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--other", required=True, help="the checkout to compare with")
    parser.add_argument("--num_questions", type=int, default=9000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    with open(os.path.join(FIXTURES, "tokenization_reference.jsonl"), encoding="utf-8") as f:
        sentences = [json.loads(line)["text"] for line in f]
    examples = synthetic_examples(sentences, args.num_questions, rng)
    features, _ = featurize(examples, HostTokenizer(os.path.join(FIXTURES,
                                                                 "albert_30k_clean.model")))
    outputs = random_outputs(features.arrays["p_mask"], rng)
    print(f"{len(examples)} questions, {len(features)} windows of "
          f"{features.arrays['p_mask'].shape[1]} tokens")
    sides = {"this": postprocess.decode_spans, "other": _other_postprocess(args.other).decode_spans}
    for head in ("span", "beam"):
        times = {name: [] for name in sides}
        results = {}
        for _ in range(args.repeats):
            for name, decode_spans in sides.items():
                cpu, wall = time.process_time(), time.perf_counter()
                results[name] = decode_spans(examples, features, outputs[head], head=head)
                times[name].append((time.process_time() - cpu, time.perf_counter() - wall))
        cpu = {n: float(np.median([t[0] for t in ts])) for n, ts in times.items()}
        wall = {n: float(np.median([t[1] for t in ts])) for n, ts in times.items()}
        print(f"{head}: CPU this {cpu['this']:.2f} s, other {cpu['other']:.2f} s, ratio "
              f"{cpu['this'] / cpu['other']:.2f}; wall this {wall['this']:.2f} s, other "
              f"{wall['other']:.2f} s, ratio {wall['this'] / wall['other']:.2f} (medians of "
              f"{args.repeats})\n  {compare(results['this'], results['other'])}")


if __name__ == "__main__":
    main()
