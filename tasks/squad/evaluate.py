"""SQuAD v1.1 and v2.0 evaluation, number for number as the official scripts.

The official scripts are `evaluate-v1.1.py` and `evaluate-v2.0.py` of
https://rajpurkar.github.io/SQuAD-explorer/. Both versions go through one
path here; where the scripts differ, a keyword names the behaviour. Scores
are summed in dataset order with the scripts' arithmetic, so the printed
floats agree to the last digit.

    python -m albert_tf.tasks.squad.evaluate DATA.json PREDICTIONS.json [--na_prob_file=NA_PROBS.json]
        [--na_prob_thresh=1.0] [--out_file=EVAL.json]   # or v2.0's --na-prob-file, -n, ...
"""

import argparse
import collections
import contextlib
import json
import re
import string
import sys

from albert_tf.io_utils import read_json

# ASCII punctuation only, as in the scripts: "’" or "–" are kept.
_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
               int: "a number", float: "a number", type(None): "null"}

Question = collections.namedtuple("Question", ["qid", "answers"])  # answers: gold texts


def normalize_answer(text):
    """Lower-case, drop ASCII punctuation, then the words a/an/the, then squeeze spaces.

    The order is the scripts': punctuation goes first, so "the-end" becomes
    "theend" and keeps its article, while "A." becomes "".
    """
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction, gold):
    """1 if the two answers are equal after `normalize_answer`, else 0."""
    return int(normalize_answer(prediction) == normalize_answer(gold))


def f1(prediction, gold, empty_agrees=True):
    """Bag-of-tokens F1 of two answers after `normalize_answer`.

    empty_agrees: True is v2.0's `compute_f1`, where two answers that both
        normalise to nothing agree (1; "" answers an unanswerable question).
        False is v1.1's `f1_score`: no common token, so 0 even then.
    """
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if empty_agrees and not (pred_tokens and gold_tokens):
        return int(pred_tokens == gold_tokens)
    common = collections.Counter(pred_tokens) & collections.Counter(gold_tokens)
    return overlap_f1(sum(common.values()), len(pred_tokens), len(gold_tokens))


def overlap_f1(num_same, num_predicted, num_gold):
    """F1 of `num_same` shared units out of `num_predicted` and `num_gold`
    (0 when none is shared), with the official scripts' exact operations, so
    that the float is bit-identical to theirs."""
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / num_predicted
    recall = 1.0 * num_same / num_gold
    return (2 * precision * recall) / (precision + recall)


def gold_answers(answer_texts, v2):
    """The answers a prediction is scored against (it gets its best score over them).

    v2.0 drops gold texts that normalise to nothing; a question left with none
    (an unanswerable one, or one whose only answer is e.g. "The") is scored
    against the single answer "". v1.1 uses the texts as given.
    """
    if not v2:
        return list(answer_texts)
    return [a for a in answer_texts if normalize_answer(a)] or [""]


def read_questions(dataset):
    """The questions of a SQuAD `data` list (of articles), in file order.

    Raises ValueError naming the first malformed field, as in
    `data[0].paragraphs[2].qas[1].id must be a string, got a number`.
    """
    if not isinstance(dataset, list):
        raise ValueError(f"'data' must be an array of articles, got {_json_type(dataset)}")
    questions, seen = [], {}
    for i, article in enumerate(dataset):
        for j, paragraph in enumerate(_field(article, "paragraphs", list, f"data[{i}]")):
            for k, qa in enumerate(_field(paragraph, "qas", list, f"data[{i}].paragraphs[{j}]")):
                where = f"data[{i}].paragraphs[{j}].qas[{k}]"
                qid = _field(qa, "id", str, where)
                if qid in seen:  # the scripts would count it twice (v1.1) or once (v2.0)
                    raise ValueError(f"{where}: question id {qid!r} already used at {seen[qid]}")
                seen[qid] = where
                texts = [_field(a, "text", str, f"{where}.answers[{n}]")
                         for n, a in enumerate(_field(qa, "answers", list, where))]
                questions.append(Question(qid, texts))
    return questions


def _json_type(value):
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _field(obj, key, kind, where):
    if not isinstance(obj, dict):
        raise ValueError(f"{where} must be an object, got {_json_type(obj)}")
    if key not in obj:
        raise ValueError(f"{where}: missing field {key!r}")
    if not isinstance(obj[key], kind):
        raise ValueError(f"{where}.{key} must be {_JSON_TYPES[kind]}, got {_json_type(obj[key])}")
    return obj[key]


def squad_version(squad_json):
    """"2.0" or "1.1" for a whole SQuAD file (the object holding `version` and `data`).

    2.0 when `version` says so (SQuAD 2.0 files have "v2.0") or any question
    has `is_impossible`; 1.1 otherwise. Validates the file's structure.
    """
    if not isinstance(squad_json, dict) or "data" not in squad_json:
        raise ValueError("not a SQuAD file: expected an object with a 'data' array")
    read_questions(squad_json["data"])
    if str(squad_json.get("version", "")).lstrip("v").startswith("2"):
        return "2.0"
    qas = (qa for article in squad_json["data"] for paragraph in article["paragraphs"]
           for qa in paragraph["qas"])
    return "2.0" if any("is_impossible" in qa for qa in qas) else "1.1"


def check_predictions(predictions):
    """Returns `predictions` if it maps question ids to answer strings, else raises."""
    _check_mapping(predictions, "predictions", "a string", lambda v: isinstance(v, str))
    return predictions


def check_na_probs(na_probs, questions, predictions):
    """Returns `na_probs` if it gives a number for every predicted question, else raises."""
    _check_mapping(na_probs, "no-answer probabilities", "a number",
                   lambda v: isinstance(v, (int, float)) and not isinstance(v, bool))
    missing = [q.qid for q in questions if q.qid in predictions and q.qid not in na_probs]
    if missing:
        shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        raise ValueError(f"no-answer probability missing for {len(missing)} "
                         f"predicted question(s): {shown}")
    return na_probs


def _check_mapping(mapping, what, value_name, value_ok):
    if not isinstance(mapping, dict):
        raise ValueError(f"{what} must be an object mapping each question id to "
                         f"{value_name}, got {_json_type(mapping)}")
    for qid, value in mapping.items():
        if not value_ok(value):
            raise ValueError(f"{what}: the value for {qid!r} must be {value_name}, "
                             f"got {_json_type(value)}")


def _raw_scores(dataset, predictions, v2):
    """(questions, {qid: exact}, {qid: f1}) in dataset order, after validating the inputs.

    A missing prediction scores 0 and is reported on stderr with the script's
    message (v2.0 prints it on stdout; here stdout stays clean JSON).
    """
    questions = read_questions(dataset)
    check_predictions(predictions)
    if not questions:
        raise ValueError("the data set has no questions")
    exact, f1s = {}, {}
    for q in questions:
        if not (v2 or q.answers):
            raise ValueError(f"question {q.qid!r} has no answers, which SQuAD v1.1 needs; "
                             "an unanswerable question makes this a v2.0 file")
        if q.qid not in predictions:
            print(f"Missing prediction for {q.qid}" if v2 else
                  f"Unanswered question {q.qid} will receive score 0.", file=sys.stderr)
            exact[q.qid] = f1s[q.qid] = 0
            continue
        golds = gold_answers(q.answers, v2)
        exact[q.qid] = max(exact_match(predictions[q.qid], g) for g in golds)
        f1s[q.qid] = max(f1(predictions[q.qid], g, empty_agrees=v2) for g in golds)
    return questions, exact, f1s


def _summary(exact, f1s, qids):
    """The scripts' `make_eval_dict`: percentages over `qids`, summed in their order."""
    total = len(qids)
    return {"exact": 100.0 * sum(exact[k] for k in qids) / total,
            "f1": 100.0 * sum(f1s[k] for k in qids) / total,
            "total": total}


def evaluate_v1(dataset, predictions):
    """`evaluate-v1.1.py`'s result on a `data` list: {"exact_match": %, "f1": %}.

    A question missing from `predictions` scores 0 and still counts.
    """
    _, exact, f1s = _raw_scores(dataset, predictions, v2=False)
    scores = _summary(exact, f1s, list(exact))
    return {"exact_match": scores["exact"], "f1": scores["f1"]}


def _apply_na_threshold(scores, na_probs, has_ans, predictions, thresh):
    """Scores once each prediction with no-answer probability strictly above `thresh`
    (the script's `na_prob > thresh`) is "": 1.0 if unanswerable, else 0.0."""
    return {qid: float(not has_ans[qid])
            if qid in predictions and na_probs[qid] > thresh else score
            for qid, score in scores.items()}


def evaluate_v2(dataset, predictions, na_probs=None, na_prob_thresh=1.0):
    """`evaluate-v2.0.py`'s result on a `data` list, with its keys in its order.

    exact, f1, total; then HasAns_* and NoAns_* (exact, f1, total) when there
    are such questions; then, when `na_probs` is given, `find_best_threshold`'s
    four keys. A question is unanswerable when its `answers` list is empty.
    Without `na_probs` every no-answer probability is 0.0, as in the script.
    """
    questions, exact_raw, f1_raw = _raw_scores(dataset, predictions, v2=True)
    probs = (dict.fromkeys(predictions, 0.0) if na_probs is None
             else check_na_probs(na_probs, questions, predictions))
    has_ans = {q.qid: bool(q.answers) for q in questions}
    exact = _apply_na_threshold(exact_raw, probs, has_ans, predictions, na_prob_thresh)
    f1s = _apply_na_threshold(f1_raw, probs, has_ans, predictions, na_prob_thresh)
    result = _summary(exact, f1s, list(has_ans))
    for prefix, answerable in (("HasAns", True), ("NoAns", False)):
        qids = [qid for qid, has in has_ans.items() if has == answerable]
        if qids:
            result.update({f"{prefix}_{k}": v for k, v in _summary(exact, f1s, qids).items()})
    if na_probs is not None:
        result.update(_best_thresholds(exact_raw, f1_raw, predictions, probs, has_ans))
    return result


def _best_threshold(scores, predictions, na_probs, has_ans):
    """The script's `find_best_thresh`: (best score in %, its threshold).

    Starts with every question answered "" (score: the number of unanswerable
    ones, threshold 0.0), then answers them one at a time by rising no-answer
    probability. Python's stable sort leaves tied probabilities in `na_probs`'
    own order, and each question is a step of its own, so a best found inside
    a tie cannot be reproduced with its threshold. An unanswerable question
    costs 1 once its prediction is non-empty even if that text normalises to
    "". Only a strictly better score moves the threshold. A question without a
    prediction (where the script fails) scores 0 at every threshold.
    """
    score = sum(1 for qid, has in has_ans.items() if not has and qid in predictions)
    best_score, best_thresh = score, 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in has_ans or qid not in predictions:
            continue
        if has_ans[qid]:
            score += scores[qid]
        elif predictions[qid]:
            score -= 1
        if score > best_score:
            best_score, best_thresh = score, na_probs[qid]
    return 100.0 * best_score / len(scores), best_thresh


def _best_thresholds(exact_raw, f1_raw, predictions, na_probs, has_ans):
    best_exact, exact_thresh = _best_threshold(exact_raw, predictions, na_probs, has_ans)
    best_f1, f1_thresh = _best_threshold(f1_raw, predictions, na_probs, has_ans)
    return {"best_exact": best_exact, "best_exact_thresh": exact_thresh,
            "best_f1": best_f1, "best_f1_thresh": f1_thresh}


def find_best_threshold(predictions, na_probs, dataset):
    """The no-answer thresholds that maximise exact match and F1 on a v2.0 `data` list.

    Scores come from the raw predictions, whatever threshold made them.
    Returns {"best_exact": %, "best_exact_thresh", "best_f1": %,
    "best_f1_thresh"}; predict "" where the probability is above a threshold.
    `_best_threshold` lists the script's quirks, kept on purpose.
    """
    questions, exact_raw, f1_raw = _raw_scores(dataset, predictions, v2=True)
    check_na_probs(na_probs, questions, predictions)
    has_ans = {q.qid: bool(q.answers) for q in questions}
    return _best_thresholds(exact_raw, f1_raw, predictions, na_probs, has_ans)


def _parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m albert_tf.tasks.squad.evaluate",
        description="Official SQuAD metrics; v1.1 or v2.0 is read from DATA.json.")
    parser.add_argument("data_file", metavar="DATA.json")
    parser.add_argument("pred_file", metavar="PREDICTIONS.json", help="question id -> answer")
    parser.add_argument("--na_prob_file", "--na-prob-file", "-n", metavar="NA_PROBS.json",
                        help="v2.0: question id -> probability of no answer")
    parser.add_argument("--na_prob_thresh", "--na-prob-thresh", "-t", type=float, metavar="P",
                        help='v2.0: predict "" where the probability exceeds this (1.0)')
    parser.add_argument("--out_file", "--out-file", "-o", metavar="EVAL.json",
                        help="write the metrics here instead of stdout")
    return parser.parse_args(argv)


@contextlib.contextmanager
def _blame(path):
    """Turns any problem in the block into a one-line ValueError naming `path`."""
    try:
        yield
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror}") from None
    except ValueError as e:  # read_json's own messages already start with the path
        raise ValueError(str(e) if str(e).startswith(f"{path}:") else f"{path}: {e}") from None


def _evaluate_files(args):
    """(result, version) of the files named on the command line."""
    with _blame(args.data_file):
        squad_json = read_json(args.data_file)
        version = squad_version(squad_json)
        if version == "1.1" and (args.na_prob_file or args.na_prob_thresh is not None):
            raise ValueError("is SQuAD v1.1; --na_prob_file and --na_prob_thresh "
                             "apply to v2.0 only")
    dataset = squad_json["data"]
    with _blame(args.pred_file):
        predictions = check_predictions(read_json(args.pred_file))
    na_probs = None
    if args.na_prob_file:
        with _blame(args.na_prob_file):
            na_probs = check_na_probs(read_json(args.na_prob_file),
                                      read_questions(dataset), predictions)
    thresh = 1.0 if args.na_prob_thresh is None else args.na_prob_thresh
    with _blame(args.data_file):
        if version == "1.1":
            return evaluate_v1(dataset, predictions), version
        return evaluate_v2(dataset, predictions, na_probs, thresh), version


def exit_status(work):
    """Runs `work()` for an evaluation script's `main`: 0, or 1 after a ValueError,
    printed as one `error: <message>` line on stderr."""
    try:
        work()
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def _report(args):
    result, version = _evaluate_files(args)
    if args.out_file:
        with _blame(args.out_file), open(args.out_file, "w", encoding="utf-8") as f:
            json.dump(result, f)
    else:
        print(json.dumps(result, indent=2 if version == "2.0" else None))


def main(argv=None):
    """Prints what the official script prints (v1.1 on one line, v2.0 indented)."""
    args = _parse_args(argv)
    return exit_status(lambda: _report(args))


if __name__ == "__main__":
    sys.exit(main())
