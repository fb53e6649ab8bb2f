"""`--task=chid`: CHID, CLUE's Chinese idiom cloze.

One example a blank (`data`), its candidates scored each on its own row by
the multiple-choice head (`AlbertMultipleChoice`) over CLUE's baseline rows
(`features`). A passage group's blanks (one line's, sharing its candidates)
are answered together: by the global assignment, each idiom used once, as
CLUE's baseline decodes (`--chid_decoding=global`, the default), or each
blank alone (`argmax`). Evaluation reports accuracy over blanks, as CLUE
does, for both decoders, `accuracy` being the chosen one's, beside chance
(the mean of 1 / candidates). The test split's answers are CLUE's
submission file `chid_predict.json` (`{"#idiom000123#": candidate index}`)
or, for FewCLUE's files, `chidf_predict.json` (`{"id", "answer"}` lines).
"""

import json
import os

import numpy as np

from albert_tf.io_utils import atomic_file
from albert_tf.models import AlbertMultipleChoice
from albert_tf.tasks import declarations, metrics, register
from albert_tf.tasks.base import Task
from albert_tf.tasks.losses import head_loss
from albert_tf.tasks.chid.data import FEWCLUE, read_chid
from albert_tf.tasks.chid.features import encode_blanks
from albert_tf.tasks.multiple_choice.task import choice_features

SUBMISSION_FILES = {"clue": "chid_predict.json", "fewclue": "chidf_predict.json"}


def group_scores(examples, logits):
    """`(scores, at)`: float32 `(groups, blanks, candidates)` of the examples'
    passage groups, -inf at no blank or candidate, and `at` the `(group, slot)`
    of each example in it."""
    _, group, counts = np.unique([e.group for e in examples], return_inverse=True,
                                 return_counts=True)
    order = np.argsort(group, kind="stable")
    slot = np.empty(len(examples), np.int64)
    slot[order] = np.arange(len(examples)) - np.repeat(np.cumsum(counts) - counts, counts)
    logits = np.array(logits, np.float32)
    logits[np.arange(logits.shape[1])[None, :] >= np.array([len(e.choices) for e in examples])
           [:, None]] = -np.inf
    scores = np.full((len(counts), counts.max(initial=0), logits.shape[1]), -np.inf, np.float32)
    scores[group, slot] = logits
    return scores, (group, slot)


def answers(examples, logits, greedy):
    """The candidate index answered for each example, int `(N,)`:
    `albert_tf.steps.cloze_decode.answer_blanks` over its passage group."""
    import tensorflow as tf

    from albert_tf.steps.cloze_decode import answer_blanks

    if not len(examples):
        return np.zeros([0], np.int64)
    scores, at = group_scores(examples, logits)
    return answer_blanks(tf.constant(scores), greedy).numpy()[at]


class ChidTask(Task):
    """CHID on CLUE's or FewCLUE's files (`data`)."""
    pipeline_tag, language = "multiple-choice", "zh"

    primary_metric = "accuracy"

    def read_examples(self, data_dir, split, options=None):
        return read_chid(data_dir, split)

    def featurize(self, examples, tokenizer, settings, split):
        arrays, lengths = encode_blanks(examples, tokenizer, settings.max_seq_length)
        return choice_features(arrays, lengths, examples)

    def build_model(self, backbone, settings, head=None):
        return AlbertMultipleChoice(backbone, dropout=settings.classifier_dropout,
                                    head_loss=head_loss(self.options(settings)))

    def _greedy(self):
        return self.task_options.chid_decoding == "global"

    def evaluate(self, scoring):
        """Accuracy over blanks of both decoders, the chosen one's as `accuracy`."""
        split = scoring.split
        unlabelled = [e.key for e in split.examples if e.label is None]
        if unlabelled:
            raise ValueError(f"task {self.name!r}: the {split.name} split has blanks without "
                             f"an answer (first: {unlabelled[0]}); it cannot be scored")
        labels = np.array([e.label for e in split.examples])
        logits = split.outputs["logits"]
        results = {f"{name}_accuracy": metrics.accuracy(
            labels, answers(split.examples, logits, greedy=name == "global"))
            for name in ("global", "argmax")}
        results["accuracy"] = results[f"{self.task_options.chid_decoding}_accuracy"]
        results["chance_accuracy"] = float(np.mean([1 / len(e.choices) for e in split.examples]))
        results["blanks"] = len(labels)
        results["passage_groups"] = len({e.group for e in split.examples})
        return results

    def write_predictions(self, scoring):
        """CLUE's `chid_predict.json` or FewCLUE's `chidf_predict.json`."""
        split = scoring.split
        chosen = answers(split.examples, split.outputs["logits"], self._greedy())
        layout = split.examples[0].layout
        path = os.path.join(scoring.output_dir, SUBMISSION_FILES[layout])
        with atomic_file(path, "w", encoding="utf-8", newline="\n") as f:
            if layout == FEWCLUE:
                f.writelines(json.dumps({"id": e.key, "answer": int(a)}) + "\n"
                             for e, a in zip(split.examples, chosen))
            else:
                json.dump({e.key: int(a) for e, a in zip(split.examples, chosen)}, f, indent=2)
        return path

    def serving_module(self, model, tokenizer, settings, model_dir, export_options):
        from albert_tf.tasks.chid.serving import INPUTS, ChidServing

        decoding = self.task_options.chid_decoding
        module = ChidServing(model, tokenizer, settings.max_seq_length, decoding == "global")
        return module, {"inputs": list(INPUTS), "list_inputs": ["candidates"],
                        "decoding": decoding,
                        "input_format": "passage: a text with blanks #idiom# (or #idiomNNNNNN#); "
                        "candidates: a list of idioms, '' for none; per (blank, candidate): "
                        "[CLS] candidate [SEP] left context [unused1] right context [SEP]"}


register(ChidTask(declarations()["chid"]))
