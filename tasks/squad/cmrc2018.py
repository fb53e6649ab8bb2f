"""CMRC 2018 (`cmrc2018`): Chinese span-extraction reading comprehension.

The data is SQuAD-format JSON (ymcui/cmrc2018 `squad-style-data/`, also
CLUE's `cmrc2018_public`): `train.json`, `dev.json`, `trial.json` (1,002
more labelled questions) and CLUE's unlabelled `test.json` in `--data_dir`.
Every question has an answer, so the model is the span head and the
windows, n-best decoding and serving are SQuAD v1.1's (`tasks.squad.task`),
through the tokenizer's character offsets. The metric is the official
script's (`tasks.cmrc2018_eval`), on every question of the split.

The files are not all clean: the official dev set has 193 answers (second
or third annotators') with `answer_start` -1, whose text is not in the
context, and a few answers start a character or two from where
`answer_start` says (5 in the trial set, 7 in dev). Evaluation reads answer
texts only, so it keeps them all. Training needs a place for its answer:
it takes the question's first answer found in the context (at its
`answer_start`, else the occurrence nearest to it) and skips a question with
none, logging how many it moved and skipped.
"""

import dataclasses
import json
import logging
import os
import re

from albert_tf.io_utils import atomic_file
from albert_tf.tasks import declarations, register
from albert_tf.tasks.squad import cmrc2018_evaluate
from albert_tf.tasks.squad.data import answer_char_span, read_squad
from albert_tf.tasks.squad.evaluate import Question
from albert_tf.tasks.squad.postprocess import write_prediction_files
from albert_tf.tasks.squad.task import SquadTask

log = logging.getLogger(__name__)

SPLITS = ("train", "dev", "trial", "test")
SUBMISSION_FILE = "cmrc2018_predict.json"  # CLUE's: question id -> answer text


# -- Reading --------------------------------------------------------------------

def read_cmrc2018(path):
    """The questions of a CMRC 2018 file, in file order, as `SquadExample`s:
    `tasks.squad.data.read_squad`, with `answer_start` -1 accepted (the
    official dev set's unplaced answers) and `answers` optional (test sets)."""
    return read_squad(path, allow_unplaced=True)


# -- Answers for training -------------------------------------------------------

def place_answer(context, text, start):
    """`[start, end)` of an answer in its context, or None if its text is not there.

    Where `answer_start` says when it is there (`squad.data.answer_char_span`:
    the exact text, or its words with other spacing); else the occurrence of
    the text nearest to `start` (the earlier on a tie; the first for -1).
    """
    span = _at_start(context, text, start)
    if span is not None:
        return span
    if not text.strip():
        return None
    hits = [m.start() for m in re.finditer(f"(?={re.escape(text)})", context)]
    if not hits:
        return None
    best = hits[0] if start < 0 else min(hits, key=lambda h: (abs(h - start), h))
    return best, best + len(text)


def _at_start(context, text, start):
    return answer_char_span(context, text, start) if start >= 0 else None


def training_examples(examples):
    """`(examples, moved, skipped)`: each question with one answer, placed in its context.

    The answer is the question's first one that `place_answer` finds;
    `moved` counts the questions whose answer is not their first answer at
    its own `answer_start`, `skipped` those left out (no answer text found).
    """
    out, moved, skipped = [], 0, 0
    for example in examples:
        for n, (text, start) in enumerate(example.answers):
            span = place_answer(example.context, text, start)
            if span is not None:
                break
        else:
            skipped += 1
            continue
        moved += int(n > 0 or _at_start(example.context, text, start) is None)
        out.append(dataclasses.replace(example, answers=((text, span[0]),)))
    return out, moved, skipped


# -- The task -------------------------------------------------------------------

class Cmrc2018Task(SquadTask):
    """SQuAD v1.1's windows, head, decoding and serving; CMRC 2018's files and metric."""

    eval_splits = ("dev",)
    test_splits = ("test",)
    extras = ("metrics",)  # the official scorer splits English words with NLTK
    primary_metric = "f1"  # cmrc2018_evaluate.py's F1

    def __init__(self, declared):
        super().__init__(declared, "1.1")

    def read_examples(self, data_dir, split, options=None):
        """"train", "dev", "trial" (labelled) and "test" (CLUE's, unlabelled)."""
        if split not in SPLITS:
            raise ValueError(f"task {self.name!r} has no split {split!r}; splits: "
                             f"{', '.join(SPLITS)}")
        path = os.path.join(data_dir, f"{split}.json")
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{self.name} split {split!r}: no file {path}")
        return read_cmrc2018(path)

    def featurize(self, examples, tokenizer, settings, split):
        if split == self.train_split:
            total = len(examples)
            examples, moved, skipped = training_examples(examples)
            log.log(logging.WARNING if moved or skipped else logging.INFO,
                    "cmrc2018 %s: %d of %d questions train on an answer placed away from "
                    "their first answer_start; %d skipped (no answer text in the context)",
                    split, moved, total, skipped)
        return super().featurize(examples, tokenizer, settings, split)

    def evaluate(self, scoring):
        examples = scoring.split.examples
        predictions, nbest, _ = self.decode(scoring.split)
        write_prediction_files(scoring.output_dir, predictions, nbest)
        questions = [Question(e.qid, [text for text, _ in e.answers]) for e in examples]
        result = cmrc2018_evaluate.score_questions(questions, predictions)
        return {"f1": result["F1"], "em": result["EM"],
                "average": (result["EM"] + result["F1"]) * 0.5, "questions": result["TOTAL"]}

    def write_predictions(self, scoring):
        predictions, _, _ = self.decode(scoring.split)
        path = os.path.join(scoring.output_dir, SUBMISSION_FILE)
        with atomic_file(path, "w", encoding="utf-8") as f:
            json.dump(predictions, f, ensure_ascii=False, indent=4)
            f.write("\n")
        return path


register(Cmrc2018Task(declarations()["cmrc2018"]))
