"""SQuAD decoding: model outputs -> n-best answers, no-answer odds, prediction files.

Works from the arrays of `tasks.squad.data.featurize` alone (`question_index`,
`token_start_char`, `token_end_char`, `token_is_max_context`), so cached
features decode the same as fresh ones. The rules (candidates of each head,
validity, scores, whitespace, the best answer, null odds) are
`albert_tf.steps.squad_decode`'s, the functions the served model runs in
its graph: `decode_spans` runs them eagerly over chunks of windows, so
predictions.json holds by construction the answer the served model gives.
What is left here is what only evaluation needs: the official n-best lists
and the files.

Heads (`decode_spans`'s `head`): "span", BERT-style start/end logits
(`AlbertSpanQA`); every valid span of a window is scored, not only the pairs
of the n_best_size highest starts and ends as google-research/albert
`accumulate_predictions_v1` does (the ranking is the same, and the best span
cannot be missed because its start or end was outside a top-n), and each
window contributes its n_best_size best. "beam", ALBERT's beam head
(`AlbertBeamQA`): all valid `start_n_top` x `end_n_top` pairs, as
`accumulate_predictions_v2`.

The n-best list of a question ranks the candidates of all its windows
together (ties: earlier window, then the window's own order); texts seen
already are skipped (the reference's `seen_predictions`).
"""

import json
import math
import os

import numpy as np
import tensorflow as tf

from albert_tf.steps import squad_decode as decode
from albert_tf.io_utils import atomic_file
from albert_tf.tasks.squad import evaluate as squad_eval
from albert_tf.tokenizer.sentencepiece.graph_ops import Chars

HEADS = {"span": ("start_logits", "end_logits"),
         "beam": ("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index",
                "cls_logits")}
# The n-best score names each head writes (the reference's names for v2).
_SCORE_NAMES = {"span": ("start_logit", "end_logit"), "beam": ("start_log_prob", "end_log_prob")}
FILES = {"predictions": "predictions.json", "nbest": "nbest_predictions.json",
         "null_odds": "null_odds.json"}
# Candidates scored per eager call (the span head's: windows x length x max_answer_length).
_CANDIDATES = 1 << 22


def _contexts(examples):
    """`(decode.Contexts, row, splits)`: the examples' distinct contexts as code
    points, each example's row among them, and the rows' flat offsets."""
    rows = {}
    row = np.array([rows.setdefault(e.context, len(rows)) for e in examples], np.int64)
    # Code points as Python indexes strings (a lone surrogate is one, too).
    points = [np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)
              for text in rows]
    lengths = np.array([len(p) for p in points], np.int32)
    splits = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    cp = np.concatenate(points).astype(np.int32) if points else np.zeros(0, np.int32)
    chars = Chars(cp=tf.constant(cp), splits=tf.constant(splits),
                  row_ids=tf.constant(np.repeat(np.arange(len(points), dtype=np.int32), lengths)),
                  pos=tf.range(len(cp)))
    return decode.Contexts.build(chars), row, splits


def _window_tops(arrays, outputs, head, contexts, window_offset, k, max_answer_length):
    """`decode.Top` (numpy) of every window, computed `_CANDIDATES` candidates at a time.

    Windows go in chunks of similar reach (one past their last context
    token), each cut to its longest: no candidate past a window's context is
    valid, and the span head's work grows with the length.
    """
    is_context = arrays["token_start_char"] >= 0
    reach = np.where(is_context.any(axis=1),
                     is_context.shape[1] - np.argmax(is_context[:, ::-1], axis=1), 1)
    order = np.argsort(reach, kind="stable")
    per_window = (is_context.shape[1] * max_answer_length if head == "span"
                  else np.shape(outputs["end_top_index"])[1])
    chunk = max(1, _CANDIDATES // per_window)
    parts = []
    for lo in range(0, len(order), chunk):
        rows = order[lo:lo + chunk]
        cut = (rows, slice(0, reach[rows].max()))

        def flat(name):  # row-relative characters -> flat ones; -1 off the context
            return np.where(is_context[cut], arrays[name][cut] + window_offset[rows, None],
                            -1).astype(np.int32)

        tokens = decode.TokenChars(begin=flat("token_start_char"), end=flat("token_end_char"),
                                   is_max_context=arrays["token_is_max_context"][cut] == 1)
        mine = {n: v[cut] if n in HEADS["span"] else v[rows] for n, v in outputs.items()}
        top = decode.window_top(tokens, contexts, mine, head, max_answer_length, k)
        parts.append([x.numpy() for x in top])
    width = max(p[0].shape[1] for p in parts)  # a short chunk may have fewer than k candidates
    tops = [np.concatenate([np.pad(x, ((0, 0), (0, width - x.shape[1]))) for x in field])
            for field in zip(*parts)]
    back = np.argsort(order)  # chunk order -> window order
    return decode.Top(*(x[back] for x in tops))


def _softmax(scores):
    """The reference's `_compute_softmax` (max-shifted, in float64)."""
    top = max(scores, default=0.0)
    exps = [math.exp(s - top) for s in scores]
    total = sum(exps)
    return [e / total for e in exps]


def _nbest(context, candidates, n_best_size, names):
    """One question's n-best entries from its `(begin, end, start_score,
    end_score)` candidates, best first: texts seen already are skipped."""
    entries, seen = [], set()
    for begin, end, first, second in candidates:
        text = context[begin:end]
        if text in seen:
            continue
        seen.add(text)
        entries.append({"text": text, names[0]: first, names[1]: second, "start_char": begin,
                        "end_char": end})
        if len(entries) == n_best_size:
            break
    probabilities = _softmax([e[names[0]] + e[names[1]] for e in entries])
    return [{"text": e.pop("text"), "probability": p, **e} for e, p in zip(entries, probabilities)]


def _nbest_lists(examples, top, question, context_offset, n_best_size, names):
    """{qid: n-best list} from the valid entries of every window's `top`."""
    owner = np.repeat(question, top.valid.shape[1])
    valid = np.flatnonzero(top.valid.ravel())
    # By question, then score, best first; ties stay in window order, then the top's.
    order = valid[np.lexsort((-top.score.ravel()[valid], owner[valid]))]
    owner = owner[order]
    shift = context_offset[owner]  # flat characters -> the question's context's
    candidates = list(zip((top.begin.ravel()[order] - shift).tolist(),
                          (top.end_char.ravel()[order] - shift).tolist(),
                          top.start_score.ravel()[order].tolist(),
                          top.end_score.ravel()[order].tolist()))
    bounds = np.searchsorted(owner, np.arange(len(examples) + 1)).tolist()
    return {e.qid: _nbest(e.context, candidates[bounds[q]:bounds[q + 1]], n_best_size, names)
            for q, e in enumerate(examples)}


def _check_inputs(examples, features, outputs, head):
    if head not in HEADS:
        raise ValueError(f"decode_spans: unknown head {head!r}; known: {sorted(HEADS)}")
    missing = [k for k in HEADS[head] if k not in outputs]
    if missing:
        raise ValueError(f"decode_spans: head {head!r} needs outputs {missing}; got "
                         f"{sorted(outputs)}")
    for name in HEADS[head]:
        if len(outputs[name]) != len(features):
            raise ValueError(f"decode_spans: outputs[{name!r}] has {len(outputs[name])} rows, "
                             f"features have {len(features)} windows")
    if head == "beam" and np.shape(outputs["end_top_index"])[1] % np.shape(
            outputs["start_top_index"])[1]:
        raise ValueError(f"decode_spans: end_top_index has {np.shape(outputs['end_top_index'])[1]} "
                         "columns, not a multiple of start_top_index's "
                         f"{np.shape(outputs['start_top_index'])[1]}")
    absent = sorted(set(range(len(examples))) - set(features.arrays["question_index"].tolist()))
    if absent:
        qids = [examples[i].qid for i in absent[:5]]
        raise ValueError(f"decode_spans: {len(absent)} question(s) have no window, e.g. {qids} "
                         "(featurized with is_training=True, which skips some?)")


def decode_spans(examples, features, outputs, n_best_size=20, max_answer_length=30,
                 head="span"):
    """N-best answers of every question from the model outputs of its windows.

    Args:
        examples: the `SquadExample`s that `features` were made from.
        features: `data.featurize`'s `Features` (N windows, length L).
        outputs: numpy arrays in window order. head "span": `start_logits`,
            `end_logits` (N, L) float32 (-inf past a batch's padding). head "beam":
            `start_top_log_probs`, `start_top_index` (N, k); `end_top_log_probs`,
            `end_top_index` (N, k * e), entry s * e + j being the j-th end of
            the s-th start; `cls_logits` (N,).
        n_best_size: answers kept per question; max_answer_length: in tokens.

    Returns:
        `(predictions, nbest, null_odds)`, each keyed by qid in example order:
        predictions: the best span's text ("" only if no span is valid);
        nbest: lists of {"text", "probability", "start_logit", "end_logit"
        (head "beam": "start_log_prob", "end_log_prob"), "start_char",
        "end_char"}, probabilities a softmax over the listed scores;
        null_odds: higher means "no answer" (v2.0; v1.1 callers ignore it):
        "span": min over windows of start[0] + end[0], minus the best span's
        score (BERT's `score_diff`); "beam": min over windows of `cls_logits`.
    """
    _check_inputs(examples, features, outputs, head)
    if not examples:
        return {}, {}, {}
    arrays, question = features.arrays, features.arrays["question_index"]
    outputs = {k: np.asarray(outputs[k]) for k in HEADS[head]}
    contexts, row, splits = _contexts(examples)
    context_offset = splits[row]  # (B,) each question's first character among all contexts
    top = _window_tops(arrays, outputs, head, contexts, context_offset[question],
                       n_best_size if head == "span" else None, max_answer_length)
    found, window, score = decode.question_best(top, question, len(examples))
    odds = decode.null_odds(outputs, head, question, len(examples), score).numpy()
    # The best: the first of the winning window's top, as the served model answers.
    at = window.numpy() * top.valid.shape[1]
    begin = top.begin.ravel()[at] - context_offset
    end = top.end_char.ravel()[at] - context_offset
    predictions = {e.qid: e.context[begin[q]:end[q]] if ok else ""
                   for q, (e, ok) in enumerate(zip(examples, found.numpy()))}
    nbest = _nbest_lists(examples, top, question, context_offset, n_best_size,
                         _SCORE_NAMES[head])
    return predictions, nbest, {e.qid: float(o) for e, o in zip(examples, odds)}


def apply_threshold(predictions, null_odds, threshold):
    """`predictions` with "" wherever `null_odds[qid] > threshold`.

    Strictly greater, as the official v2.0 script's `na_prob > thresh`, so a
    threshold from `best_null_threshold` reproduces its best_f1. (The
    reference's `write_predictions_v2` answers only below the threshold, which
    empties the question the threshold was taken from.)
    """
    missing = [qid for qid in predictions if qid not in null_odds]
    if missing:
        raise ValueError(f"apply_threshold: no null odds for {len(missing)} question(s), "
                         f"e.g. {missing[:5]}")
    return {qid: "" if null_odds[qid] > threshold else text for qid, text in predictions.items()}


def best_null_threshold(predictions, null_odds, examples):
    """The null-odds threshold that maximises F1 on labelled `examples` (v2.0).

    `tasks.squad.evaluate.find_best_threshold`'s `best_f1_thresh`, from the raw
    (un-thresholded) `predictions`. google-research/albert tunes it on the
    dev set it then reports (`evaluate_v2`), which is optimistic; the
    fine-tuning code reports both that score and the one with a threshold
    chosen on held-out data.

    Raises:
        ValueError: an example is neither answerable nor `is_impossible`
            (unlabelled data cannot choose a threshold).
    """
    unlabelled = [e.qid for e in examples if not (e.answers or e.is_impossible)]
    if unlabelled:
        raise ValueError(f"best_null_threshold: {len(unlabelled)} question(s) have no gold "
                         f"answers and are not is_impossible, e.g. {unlabelled[:5]}")
    qas = [{"id": e.qid, "answers": [{"text": text} for text, _ in e.answers]} for e in examples]
    dataset = [{"paragraphs": [{"qas": qas}]}]
    return squad_eval.find_best_threshold(predictions, null_odds, dataset)["best_f1_thresh"]


def write_prediction_files(output_dir, predictions, nbest, null_odds=None):
    """Writes predictions.json (qid -> text), nbest_predictions.json and, when
    given, null_odds.json (qid -> float), each atomically; returns their paths.

    These are the files the official evaluation scripts read (`null_odds.json`
    is v2.0's `--na-prob-file`).
    """
    contents = {"predictions": predictions, "nbest": nbest, "null_odds": null_odds}
    bad = [qid for qid, value in (null_odds or {}).items() if not math.isfinite(value)]
    if bad:
        raise ValueError(f"write_prediction_files: null odds not finite for {bad[:5]} (JSON "
                         "has no inf or NaN)")
    paths = []
    for key, name in FILES.items():
        if contents[key] is None:
            continue
        path = os.path.join(output_dir, name)
        with atomic_file(path, "w", encoding="utf-8") as f:
            json.dump(contents[key], f, indent=4, ensure_ascii=False, allow_nan=False)
            f.write("\n")
        paths.append(path)
    return paths
