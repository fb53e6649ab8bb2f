"""Peak memory of one hostile request through each raw-text serving signature.

    python bench/serving_memory.py [--rows=2,8] [--chars=20000] [--kinds=sst2,...]

The request: `rows` texts, half of `chars` Chinese characters and half of
`chars` "x" (every text input of the signature gets them; multiple choice
gets two choices, one of them long). Each (signature, rows) runs in its own
process: it builds the serving module of a random `albert_tiny`-sized model
(SentencePiece or WordPiece vocabulary from tests/fixtures), calls the
signature once on a short text (tracing), then once on the request, and
reports the process's peak resident memory (`ru_maxrss`), the resident memory
before the request and the request's seconds. A child killed for memory is a
row that says so. The machine may be shared: memory is per process and not
affected much; seconds are.
"""

import argparse
import os
import resource
import subprocess
import sys
import time

from common import ROOT, emit, table

SPM = os.path.join(ROOT, "tests", "fixtures", "spm", "albert_30k_clean.model")
WORDPIECE = os.path.join(ROOT, "tests", "fixtures", "wordpiece", "vocab.txt")
# kind: (vocabulary, max_seq_length)
KINDS = {
    "sst2": (SPM, 128),               # one-sentence classification
    "mrpc": (SPM, 128),               # pair classification
    "ocnli": (WORDPIECE, 128),        # Chinese pair classification
    "ner_zh_crf": (WORDPIECE, 128),   # Chinese token classification, CRF
    "ner_en": (SPM, 128),             # token classification, softmax
    "cmrc2018": (WORDPIECE, 512),     # Chinese reading comprehension (windows)
    "squad_v2": (SPM, 384),           # SQuAD v2.0, beam head
    "c3": (WORDPIECE, 512),           # multiple choice
}
TAGS = ("O", "B-PER", "I-PER", "B-LOC", "I-LOC")


def _rss_mib():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) / 1024


def build(kind):
    """`(module, inputs(texts) -> dict of string tensors)` for one kind."""
    import tensorflow as tf

    from albert_tf.backbone import AlbertBackbone
    from albert_tf.tokenizer.loading import load_tokenizer
    from albert_tf.config import AlbertConfig
    from albert_tf.export.classification import ClassifierServing
    from albert_tf.export.multiple_choice import MultipleChoiceServing
    from albert_tf.export.squad import SquadServing
    from albert_tf.export.token_classification import TokenClassifierServing
    from albert_tf.models import (AlbertBeamQA, AlbertClassifier, AlbertMultipleChoice,
                                  AlbertSpanQA, AlbertTokenClassifier)
    from albert_tf.tasks.squad.task import SquadOptions

    vocabulary, length = KINDS[kind]
    tokenizer = load_tokenizer(vocabulary)
    config = AlbertConfig.preset("albert_tiny", vocabulary_size=tokenizer.vocabulary_size)
    backbone = AlbertBackbone(config)
    s = tf.constant
    if kind in ("sst2", "mrpc", "ocnli"):
        pair = kind != "sst2"
        module = ClassifierServing(AlbertClassifier(backbone, 3), tokenizer, length,
                                   ("a", "b", "c"), pair)
        return module, (lambda t: {"text_a": s(t), "text_b": s(t)} if pair else {"text": s(t)})
    if kind.startswith("ner"):
        model = AlbertTokenClassifier(backbone, len(TAGS), crf=kind.endswith("crf"))
        return TokenClassifierServing(model, tokenizer, length, TAGS), lambda t: {"text": s(t)}
    if kind in ("cmrc2018", "squad_v2"):
        options = SquadOptions(doc_stride=128, max_query_length=64, max_answer_length=30)
        v2 = kind == "squad_v2"
        model = AlbertBeamQA(backbone, 5, 5) if v2 else AlbertSpanQA(backbone)
        module = SquadServing(model, tokenizer, length, options, "beam" if v2 else "span", v2)
        return module, lambda t: {"question": s(t), "context": s(t)}
    module = MultipleChoiceServing(AlbertMultipleChoice(backbone), tokenizer, length, 64, False)
    return module, lambda t: {"context": s(t), "question": s(t),
                              "choices": s([[x, "a"] for x in t])}


def measure(kind, rows, chars):
    module, inputs = build(kind)
    module.serving_default(**inputs(["warm up"]))
    before = _rss_mib()
    half = rows // 2
    texts = ["中" * chars] * (rows - half) + ["x" * chars] * half
    start = time.perf_counter()
    outputs = module.serving_default(**inputs(texts))
    seconds = time.perf_counter() - start
    assert all(int(v.shape[0]) == rows for v in outputs.values()), "one answer a row"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"kind": kind, "rows": rows, "chars": chars, "rss_before_mib": round(before),
            "peak_rss_mib": round(peak), "seconds": round(seconds, 1)}


def child(kind, rows, chars):
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    result = subprocess.run([sys.executable, __file__, f"--kinds={kind}", f"--rows={rows}",
                             f"--chars={chars}", "--child"], capture_output=True, text=True,
                            env=env, cwd=ROOT)
    lines = [l for l in result.stdout.splitlines() if l.startswith("{")]
    if result.returncode != 0 or not lines:
        reason = "killed (out of memory?)" if result.returncode < 0 else result.stderr[-300:]
        return {"kind": kind, "rows": rows, "chars": chars, "peak_rss_mib": reason}
    import json

    return json.loads(lines[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="2,8", help="comma-separated request sizes")
    parser.add_argument("--chars", type=int, default=20000)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        parser.error(f"--kinds: unknown {', '.join(unknown)}; choose from {', '.join(KINDS)}")
    if args.child:
        emit(measure(kinds[0], int(args.rows), args.chars))
        return
    results = [child(kind, int(rows), args.chars) for kind in kinds
               for rows in args.rows.split(",")]
    print(table(results, ["kind", "rows", "chars", "rss_before_mib", "peak_rss_mib",
                          "seconds"]))
    emit({"serving_memory": results})


if __name__ == "__main__":
    main()
