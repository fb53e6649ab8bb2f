"""CMRC 2018 evaluation, as the official script computes it.

The official script is `squad-style-data/cmrc2018_evaluate.py` of
https://github.com/ymcui/cmrc2018 ("v5 - special", Python 2). This module
reproduces its scores in Python 3:

    python -m albert_tf.tasks.squad.cmrc2018_evaluate DATA.json PREDICTIONS.json

prints the script's one line of JSON, keys in its order: `AVERAGE`, `F1`,
`EM` (percentages formatted "%.3f"), `TOTAL`, `SKIP` and `FILE` (the
predictions path as given).

The script's rules, kept on purpose:
- Every question of the data counts in TOTAL; one missing from the
  predictions scores 0 and counts in SKIP ("Unanswered question: ID" on
  stderr). Ids are stripped of outer whitespace before the lookup. Only the
  answer texts are read, so answers with `answer_start` -1 count as any other.
- Texts are lower-cased, then stripped of outer whitespace.
- EM: 1 if some answer equals the prediction once the characters of
  `PUNCTUATION` are deleted from both (spaces inside are kept).
- F1: texts are cut into segments after deleting `PUNCTUATION` (a deleted
  character does not end a run: "a-b" is the one segment "ab"): each
  character in U+4E00..U+9FA5 alone, every run of other characters through
  NLTK's word tokenizer. The overlap is the longest common *contiguous* run
  of segments (the script's `find_lcs`), precision and recall are it over
  the prediction's and the answer's segment counts; the best F1 over the
  answers, 0 without overlap.
- Both are summed in data order, scaled by 100 / TOTAL; AVERAGE is
  (EM + F1) / 2. The floats are the script's, operation for operation.

Where Python 3 could differ from the script under Python 2:
- NLTK: the script calls `nltk.word_tokenize(text)`, which first splits
  sentences with the Punkt model (a data download); here
  `nltk.word_tokenize(text, preserve_line=True)` skips that. Within a latin
  run a period before another sentence ("end. Next") then stays on its word
  ("end.") instead of being its own segment; and the Treebank tokenizer's
  rules changed between the NLTK of 2018 and 3.10 (quotes, ellipses). Runs
  between Chinese characters rarely hold either.
- Case and space: lowering goes character by character with Python's simple
  mapping, as Python 2's `unicode.lower` (no final-sigma rule, "İ" -> "i");
  U+180E counts as whitespace, as in Python 2. Letters added to Unicode after
  5.2 (Python 2.7's tables) may still lower differently.
- Predictions must be strings (the script would `str()` a number), question
  ids unique (the script would count a repeated one twice), and every
  question needs an answer (the script fails on an empty list).
"""

import argparse
import collections
import functools
import json
import sys

from albert_tf import extras
from albert_tf.io_utils import read_json
from albert_tf.tasks.squad import evaluate as squad_eval

# The script's `sp_char` list. It also lists "……" (two characters), which one
# character never equals, so a single "…" is kept.
PUNCTUATION = frozenset("-:_*^/\\~`+=，。：？！“”；’《》·、「」（）－～『』")
# Python 2.7's whitespace: Python 3's plus U+180E (no longer a space since Unicode 6.3).
_WHITESPACE = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u180e\u2000\u2001\u2002\u2003"
               "\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
KEYS = ("AVERAGE", "F1", "EM", "TOTAL", "SKIP", "FILE")


@functools.cache
def _nltk_word_tokenize():
    # Imported on first use: the task registry loads this module for every task.
    return extras.load("metrics", "CMRC 2018's official scoring (its English word split)",
                       "nltk").word_tokenize


def _word_tokenize(run):
    """NLTK's word tokens of a latin run; U+180E splits words, as it did in Python 2."""
    return _nltk_word_tokenize()(run.replace("\u180e", " "), preserve_line=True)


def normalize(text):
    """Lower-cased (character by character, as Python 2) and stripped."""
    return "".join(c.lower()[0] for c in text).strip(_WHITESPACE)


def remove_punctuation(text):
    """The text for EM: normalized, with the `PUNCTUATION` characters deleted."""
    return "".join(c for c in normalize(text) if c not in PUNCTUATION)


def segments(text):
    """The segments F1 counts: each CJK character alone, other runs through NLTK."""
    out, run = [], []
    for char in normalize(text):
        if char in PUNCTUATION:
            continue
        if "\u4e00" <= char <= "\u9fa5":  # the script's "Chinese" characters
            if run:
                out += _word_tokenize("".join(run))
                run = []
            out.append(char)
        else:
            run.append(char)
    if run:
        out += _word_tokenize("".join(run))
    return out


def longest_common_run(a, b):
    """Length of the longest contiguous run of items shared by sequences `a` and `b`."""
    best, previous = 0, [0] * (len(b) + 1)
    for x in a:
        current = [0] * (len(b) + 1)
        for j, y in enumerate(b):
            if x == y:
                current[j + 1] = previous[j] + 1
                best = max(best, current[j + 1])
        previous = current
    return best


def f1(prediction, answer):
    """The script's F1 of one prediction against one answer (0 to 1)."""
    pred, gold = segments(prediction), segments(answer)
    return squad_eval.overlap_f1(longest_common_run(gold, pred), len(pred), len(gold))


def exact_match(prediction, answer):
    """1 if the two are equal once punctuation is removed, else 0."""
    return int(remove_punctuation(prediction) == remove_punctuation(answer))


def score(prediction, answers):
    """`(em, f1)` of a prediction: the best over the question's answer texts."""
    if not answers:
        raise ValueError("a question has no answers (the official script fails on it)")
    return (max(exact_match(prediction, a) for a in answers),
            max(f1(prediction, a) for a in answers))


def evaluate(dataset, predictions):
    """The script's `evaluate` on a SQuAD `data` list of articles.

    predictions: question id -> answer text. Returns `score_questions`'
    result. Raises ValueError naming a malformed field.
    """
    return score_questions(squad_eval.read_questions(dataset), predictions)


def score_questions(questions, predictions):
    """EM and F1 of `predictions` (question id -> text) on `questions`, in their order.

    questions: `tasks.squad.evaluate.Question`s (id, answer texts). Returns
    `{"F1", "EM"}` in percent (floats, unformatted), `"TOTAL"` questions and
    `"SKIP"`, those without a prediction (each scores 0 and is named on stderr).
    """
    squad_eval.check_predictions(predictions)
    if not questions:
        raise ValueError("the data set has no questions")
    total_f1, total_em, skipped = 0, 0, 0
    for question in questions:
        qid = question.qid.strip(_WHITESPACE)
        if qid not in predictions:
            print(f"Unanswered question: {qid}", file=sys.stderr)
            skipped += 1
            continue
        try:
            em, f1_value = score(predictions[qid], question.answers)
        except ValueError as e:
            raise ValueError(f"question {question.qid!r}: {e}") from None
        total_f1 += f1_value
        total_em += em
    total = len(questions)
    return {"F1": 100.0 * total_f1 / total, "EM": 100.0 * total_em / total, "TOTAL": total,
            "SKIP": skipped}


def official_output(result, prediction_file):
    """What the script prints for `evaluate`'s result: an ordered dict of `KEYS`."""
    average = (result["EM"] + result["F1"]) * 0.5
    return collections.OrderedDict([
        ("AVERAGE", "%.3f" % average), ("F1", "%.3f" % result["F1"]),
        ("EM", "%.3f" % result["EM"]), ("TOTAL", result["TOTAL"]), ("SKIP", result["SKIP"]),
        ("FILE", prediction_file)])


def _read(path):
    try:
        return read_json(path)
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror}") from None


def evaluate_files(data_file, prediction_file):
    """`official_output` of the two files; errors name the file at fault."""
    data = _read(data_file)
    if not isinstance(data, dict) or "data" not in data:
        raise ValueError(f"{data_file}: not a SQuAD-format file: expected an object with a "
                         "'data' array")
    predictions = _read(prediction_file)
    try:
        squad_eval.check_predictions(predictions)
    except ValueError as e:
        raise ValueError(f"{prediction_file}: {e}") from None
    try:
        result = evaluate(data["data"], predictions)
    except ValueError as e:
        raise ValueError(f"{data_file}: {e}") from None
    return official_output(result, prediction_file)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m albert_tf.tasks.squad.cmrc2018_evaluate",
        description="CMRC 2018's official EM and F1 (ymcui/cmrc2018 cmrc2018_evaluate.py).")
    parser.add_argument("dataset_file", metavar="DATA.json", help="the SQuAD-format data set")
    parser.add_argument("prediction_file", metavar="PREDICTIONS.json",
                        help="question id -> answer text")
    args = parser.parse_args(argv)
    return squad_eval.exit_status(
        lambda: print(json.dumps(evaluate_files(args.dataset_file, args.prediction_file))))


if __name__ == "__main__":
    sys.exit(main())
