"""SQuAD decoding: model outputs -> n-best answers, no-answer odds, prediction files.

Works from the arrays of `tasks.squad.data.featurize` alone (`question_index`,
`token_start_char`, `token_end_char`, `token_is_max_context`), so cached
features decode the same as fresh ones. Two heads (`decode_spans`'s `head`):

- "span": BERT-style start/end logits (`AlbertSpanQA`). Every valid span of
  every window is scored (start + end logit), not only the pairs of the
  n_best_size highest starts and ends as google-research/albert
  `accumulate_predictions_v1` does; the ranking is the same, and the best span
  cannot be missed because its start or end was outside a top-n.
- "beam": ALBERT's beam head (`AlbertBeamQA`): the candidates are the model's
  `start_n_top` x `end_n_top` pairs, scored by start + end log-probability, as
  `accumulate_predictions_v2`.

A candidate is valid when both ends are context tokens of its window, end >=
start, it spans at most `max_answer_length` tokens and the window is the start
token's max-context window. Per question the candidates of all windows are
ranked together; texts seen already are skipped (the reference's
`seen_predictions`), as are spans whose text is empty or only whitespace (they
would read as "no answer"). Texts are `context[start_char:end_char]` of the
original paragraph, stripped of outer whitespace as the reference strips them.
"""

import json
import math
import os

import numpy as np

from albert_tf.io_utils import atomic_file
from albert_tf.tasks.squad import evaluate as squad_eval

HEADS = {"span": ("start_logits", "end_logits"),
         "beam": ("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index",
                "cls_logits")}
# The n-best score names each head writes (the reference's names for v2).
_SCORE_NAMES = {"span": ("start_logit", "end_logit"), "beam": ("start_log_prob", "end_log_prob")}
# Best span score of a question with no valid span: the reference's nonce
# entry (start and end log-probabilities -1e6 each), so its null odds is huge.
NO_SPAN_SCORE = -2e6
FILES = {"predictions": "predictions.json", "nbest": "nbest_predictions.json",
         "null_odds": "null_odds.json"}


def _valid(arrays, window, start, end, max_answer_length):
    """bool mask of candidate spans `(window, start, end)` (equal-shape int arrays)."""
    length = arrays["token_start_char"].shape[1]
    inside = (start >= 0) & (start < length) & (end >= 0) & (end < length)
    start, end = np.clip(start, 0, length - 1), np.clip(end, 0, length - 1)
    chars = arrays["token_start_char"]
    return (inside & (chars[window, start] >= 0) & (chars[window, end] >= 0)
            & (arrays["token_is_max_context"][window, start] == 1)
            & (end >= start) & (end - start < max_answer_length))


def _top(scores, k):
    """Indices of the k largest `scores`, best first; ties in index order (deterministic)."""
    kth = np.partition(scores, scores.size - k)[scores.size - k]
    top = np.flatnonzero(scores >= kth)  # a partial sort, then a small stable one
    return top[np.argsort(-scores[top], kind="stable")][:k]


def _span_candidates(arrays, outputs, n_best_size, max_answer_length):
    """`(window, start, end, start_score, end_score)` arrays: each window's n best valid spans."""
    start_logits, end_logits = outputs["start_logits"], outputs["end_logits"]
    length = start_logits.shape[1]
    offsets = np.arange(max_answer_length)
    found = []
    for w in range(len(start_logits)):
        starts = np.flatnonzero(arrays["token_is_max_context"][w] == 1)
        ends = starts[:, None] + offsets[None, :]  # (num_starts, max_answer_length)
        window = np.full_like(ends, w)
        ok = _valid(arrays, window, np.broadcast_to(starts[:, None], ends.shape), ends,
                    max_answer_length)
        if not ok.any():
            continue
        ends = np.minimum(ends, length - 1)
        scores = np.where(ok, start_logits[w, starts][:, None] + end_logits[w, ends], -np.inf)
        i, j = np.unravel_index(_top(scores.ravel(), min(n_best_size, int(ok.sum()))),
                                scores.shape)
        found.append((window[i, j], starts[i], ends[i, j], start_logits[w, starts[i]],
                      end_logits[w, ends[i, j]]))
    if not found:
        return tuple(np.zeros(0, dtype) for dtype in (int, int, int, float, float))
    return tuple(np.concatenate(parts) for parts in zip(*found))


def _v2_candidates(arrays, outputs, max_answer_length):
    """`(window, start, end, start_score, end_score)` arrays of the head's valid beam pairs."""
    start_index, end_index = outputs["start_top_index"], outputs["end_top_index"]
    k = start_index.shape[1]
    if end_index.shape[1] % k:
        raise ValueError(f"decode_spans: end_top_index has {end_index.shape[1]} columns, not "
                         f"a multiple of start_top_index's {k}")
    per_start = end_index.shape[1] // k  # end_top_*[i, s * e + j]: j-th end of start s
    start = np.repeat(start_index, per_start, axis=1)
    start_score = np.repeat(outputs["start_top_log_probs"], per_start, axis=1)
    window = np.broadcast_to(np.arange(len(start))[:, None], start.shape)
    ok = _valid(arrays, window, start, end_index, max_answer_length)
    return (window[ok], start[ok], end_index[ok], start_score[ok],
            outputs["end_top_log_probs"][ok])


def _null_scores(outputs, head, question_index, num_questions):
    """`(num_questions,)` minimum over each question's windows of its no-answer score."""
    if head == "span":  # the [CLS] span, BERT's `score_null`
        window_null = outputs["start_logits"][:, 0] + outputs["end_logits"][:, 0]
    else:  # ALBERT's `accumulate_predictions_v2`: min of cls_logits over windows
        window_null = outputs["cls_logits"]
    null = np.full(num_questions, np.inf)
    np.minimum.at(null, question_index, window_null.astype(np.float64))
    return null


def _softmax(scores):
    """The reference's `_compute_softmax` (max-shifted, in float64)."""
    top = max(scores, default=0.0)
    exps = [math.exp(s - top) for s in scores]
    return [e / sum(exps) for e in exps]


def _nbest(context, arrays, candidates, n_best_size, names):
    """The n-best entries of one question from its candidates, best first."""
    window, start, end, first, second = candidates
    entries, seen = [], set()
    for c in np.argsort(-(first.astype(np.float64) + second), kind="stable"):
        begin = int(arrays["token_start_char"][window[c], start[c]])
        stop = int(arrays["token_end_char"][window[c], end[c]])
        raw = context[begin:stop]
        text = raw.strip()
        if not text or text in seen:
            continue
        seen.add(text)
        begin += len(raw) - len(raw.lstrip())
        entries.append({"text": text, names[0]: float(first[c]), names[1]: float(second[c]),
                        "start_char": begin, "end_char": begin + len(text)})
        if len(entries) == n_best_size:
            break
    probabilities = _softmax([e[names[0]] + e[names[1]] for e in entries])
    return [{"text": e.pop("text"), "probability": p, **e} for e, p in zip(entries, probabilities)]


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
    arrays, question_index = features.arrays, features.arrays["question_index"]
    outputs = {k: np.asarray(outputs[k]) for k in HEADS[head]}
    if head == "span":
        candidates = _span_candidates(arrays, outputs, n_best_size, max_answer_length)
    else:
        candidates = _v2_candidates(arrays, outputs, max_answer_length)
    null = _null_scores(outputs, head, question_index, len(examples))
    owner = question_index[candidates[0]]
    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], np.arange(len(examples) + 1))
    predictions, nbest, null_odds = {}, {}, {}
    for q, example in enumerate(examples):
        mine = order[bounds[q]:bounds[q + 1]]
        entries = _nbest(example.context, arrays, [c[mine] for c in candidates], n_best_size,
                         _SCORE_NAMES[head])
        predictions[example.qid] = entries[0]["text"] if entries else ""
        nbest[example.qid] = entries
        best = (sum(entries[0][k] for k in _SCORE_NAMES[head]) if entries else NO_SPAN_SCORE)
        null_odds[example.qid] = float(null[q] - best if head == "span" else null[q])
    return predictions, nbest, null_odds


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
