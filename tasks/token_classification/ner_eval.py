"""Entity-level precision, recall and F1 of tag sequences, as seqeval and conlleval count them.

    python -m albert_tf.tasks.token_classification.ner_eval GOLD PRED [--scheme=iob1|iob2|bioes] [--mode=default|strict] [--json]

GOLD and PRED are CoNLL files with the same tokens line for line (a token per
line, the tag in the last column, blank lines between sentences, -DOCSTART-
lines skipped). Prints conlleval's report, or with --json one object:
`precision`, `recall`, `f1` (micro-averaged, fractions), `accuracy` (tokens
whose tag is right) and `per_type: {TYPE: {precision, recall, f1, support}}`
(support: gold entities of the type).

An entity is right when its type, first and last word are all right. A
measure with a zero denominator is 0 (seqeval's default). Default mode reads
entities by conlleval's rules; strict mode counts only chunks well-formed in
the scheme (given, or detected from the gold file).
"""

import argparse
import json
import sys

from albert_tf.io_utils import numbered_lines
from albert_tf.tasks.token_classification import tagging


def _ratio(numerator, denominator):
    return numerator / denominator if denominator else 0.0


def _prf(correct, found, gold):
    precision, recall = _ratio(correct, found), _ratio(correct, gold)
    f1 = _ratio(2 * precision * recall, precision + recall)
    return {"precision": precision, "recall": recall, "f1": f1}


def _entity_sets(sequences, mode, scheme):
    found = set()
    for index, tags in enumerate(sequences):
        found.update((index, e.type, e.start, e.end)
                     for e in tagging.entities(tags, mode, scheme))
    return found


def score(gold, predicted, mode="default", scheme=None):
    """Scores of `predicted` tag sequences against `gold` (lists of lists of tags).

    Returns `{"precision", "recall", "f1", "accuracy", "found", "correct",
    "gold", "tokens", "per_type": {type: {"precision", "recall", "f1",
    "support", "found"}}}`.
    """
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sequences but {len(predicted)} predicted")
    for i, (g, p) in enumerate(zip(gold, predicted)):
        if len(g) != len(p):
            raise ValueError(f"sequence {i}: {len(g)} gold tags but {len(p)} predicted")
    if mode == "strict" and scheme is None:
        scheme = tagging.detect_scheme(gold)
    gold_set = _entity_sets(gold, mode, scheme)
    found_set = _entity_sets(predicted, mode, scheme)
    correct = gold_set & found_set
    per_type = {}
    for kind in sorted({e[1] for e in gold_set | found_set}):
        counts = [sum(e[1] == kind for e in s) for s in (correct, found_set, gold_set)]
        per_type[kind] = {**_prf(*counts), "support": counts[2], "found": counts[1]}
    tokens = sum(len(g) for g in gold)
    right = sum(a == b for g, p in zip(gold, predicted) for a, b in zip(g, p))
    return {**_prf(len(correct), len(found_set), len(gold_set)),
            "accuracy": _ratio(right, tokens), "found": len(found_set),
            "correct": len(correct), "gold": len(gold_set), "tokens": tokens,
            "per_type": per_type}


def read_conll_tags(path):
    """`(sequences, lines)`: the last-column tags of a CoNLL file, one list a
    sentence, and the tokens with their line numbers (for comparing files)."""
    sequences, words, current = [], [], []
    for number, line in numbered_lines(path):
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":
            if current:
                sequences.append(current)
                current = []
            continue
        if len(fields) < 2:
            raise ValueError(f"{path}:{number}: expected a token and a tag, got "
                             f"{line.strip()!r}")
        try:
            tagging.split_tag(fields[-1])
        except ValueError as e:
            raise ValueError(f"{path}:{number}: {e}") from None
        current.append(fields[-1])
        words.append((number, fields[0]))
    if current:
        sequences.append(current)
    return sequences, words


def compare_files(gold_path, predicted_path, mode="default", scheme=None):
    """`score` of two CoNLL files; a `ValueError` naming the first line where
    their tokens differ."""
    gold, gold_words = read_conll_tags(gold_path)
    predicted, predicted_words = read_conll_tags(predicted_path)
    for (g_line, g_word), (p_line, p_word) in zip(gold_words, predicted_words):
        if g_word != p_word:
            raise ValueError(f"{predicted_path}:{p_line}: token {p_word!r} where "
                             f"{gold_path}:{g_line} has {g_word!r}")
    if [len(s) for s in gold] != [len(s) for s in predicted]:
        raise ValueError(f"{predicted_path}: {sum(map(len, predicted))} tokens in "
                         f"{len(predicted)} sentences, {gold_path}: "
                         f"{sum(map(len, gold))} in {len(gold)}")
    return score(gold, predicted, mode, scheme)


def report(scores):
    """conlleval's text report of `score`'s result (percentages, FB1)."""
    lines = [f"processed {scores['tokens']} tokens with {scores['gold']} phrases; found: "
             f"{scores['found']} phrases; correct: {scores['correct']}.",
             f"accuracy: {100 * scores['accuracy']:6.2f}%; precision: "
             f"{100 * scores['precision']:6.2f}%; recall: {100 * scores['recall']:6.2f}%; "
             f"FB1: {100 * scores['f1']:6.2f}"]
    for kind, s in scores["per_type"].items():
        lines.append(f"{kind:>17}: precision: {100 * s['precision']:6.2f}%; recall: "
                     f"{100 * s['recall']:6.2f}%; FB1: {100 * s['f1']:6.2f}  {s['found']}")
    return "\n".join(lines)


def as_json(scores):
    """The --json object: micro scores and per-type ones with their support."""
    return {"precision": scores["precision"], "recall": scores["recall"],
            "f1": scores["f1"], "accuracy": scores["accuracy"],
            "per_type": {k: {m: v[m] for m in ("precision", "recall", "f1", "support")}
                         for k, v in scores["per_type"].items()}}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m albert_tf.tasks.token_classification.ner_eval",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("gold")
    parser.add_argument("predicted")
    parser.add_argument("--scheme", choices=tagging.SCHEMES, default=None,
                        help="the scheme strict mode checks (default: detected from GOLD)")
    parser.add_argument("--mode", choices=tagging.MODES, default="default")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    try:
        scores = compare_files(args.gold, args.predicted, args.mode, args.scheme)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(json.dumps(as_json(scores), sort_keys=True) if args.json else report(scores))
    return 0


if __name__ == "__main__":
    sys.exit(main())
