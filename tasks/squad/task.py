"""SQuAD v1.1 (`squad`) and v2.0 (`squad_v2`): extractive question answering.

The data and windowing are the small pure functions of `tasks.squad.data` (its
windows those of the served graph, `albert_tf.steps.squad_windows`); decoding
runs the served model's functions (`albert_tf.steps.squad_decode`) through
`tasks.squad.postprocess`, which lists the n-best answers; the metrics are the
official scripts' (`tasks.squad.evaluate`). For v2.0 the no-answer threshold is
chosen on questions held out of the training set (by a hash of their id),
and the dev set is reported at that threshold; the official script's
dev-tuned `best_exact`/`best_f1` (what the original ALBERT code reported,
an optimistic number) are reported beside it, named as such.
"""

import dataclasses
import json
import os
import zlib

from albert_tf.models import AlbertSpanQA, AlbertBeamQA
from albert_tf.training.run_folder import RESULTS_FILE
from albert_tf.tasks import declarations, register
from albert_tf.tasks.base import Task
from albert_tf.tasks.squad import evaluate as squad_eval
from albert_tf.tasks.squad.data import featurize, read_squad
from albert_tf.tasks.squad.postprocess import (apply_threshold, best_null_threshold, decode_spans,
                                     write_prediction_files)

MODEL_INPUTS = ("token_ids", "segment_ids", "p_mask")


HELDOUT_SOURCE = "held-out training questions"


# v2.0: the share of training questions kept out of training to choose the
# no-answer threshold (2% of SQuAD 2.0's 130k is about 2,600 questions).
HELDOUT_FRACTION = 0.02


def _is_heldout(qid):
    return zlib.crc32(qid.encode("utf-8")) % 10_000 < HELDOUT_FRACTION * 10_000


def to_dataset(examples):
    """The official JSON `data` list of `examples` (what `squad_eval` reads)."""
    paragraphs = {}
    for e in examples:
        qas = paragraphs.setdefault(e.context, [])
        qas.append({"id": e.qid, "question": e.question, "is_impossible": e.is_impossible,
                    "answers": [{"text": t, "answer_start": s} for t, s in e.answers]})
    return [{"title": "", "paragraphs": [{"context": c, "qas": q}
                                         for c, q in paragraphs.items()]}]


def heldout_threshold(model_dir):
    """`(threshold, source)` for SQuAD v2.0: the run's held-out threshold from the
    `eval_results.json` beside `model_dir`, else `(0.0, "default 0")`."""
    path = os.path.join(os.path.dirname(os.path.abspath(model_dir)), RESULTS_FILE)
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            dev = json.load(f).get("dev", {})
        if dev.get("threshold_source") == HELDOUT_SOURCE:
            return float(dev["threshold"]), f"{HELDOUT_SOURCE} ({path})"
    return 0.0, "default 0"


class SquadTask(Task):
    pipeline_tag = "question-answering"
    eval_splits = ("dev",)
    test_splits = ()
    primary_metric = "f1"  # evaluate-v1.1.py's and evaluate-v2.0.py's F1

    def __init__(self, declared, version):
        super().__init__(declared)
        self.version = version
        self.language = "zh" if declared.name == "cmrc2018" else "en"

    @property
    def v2(self):
        return self.version == "2.0"

    def head(self, settings):
        """"beam" or "span": the option for v2.0; v1.1 always answers, with the span head."""
        return self.options(settings).qa_head if self.v2 else "span"

    def _file(self, data_dir, split):
        names = [f"{split}-v{self.version}.json", f"{split}.json"]
        for name in names:
            if os.path.isfile(os.path.join(data_dir, name)):
                return os.path.join(data_dir, name)
        raise FileNotFoundError(f"{data_dir}: no {' or '.join(names)}")

    def read_examples(self, data_dir, split, options=None):
        """"train", "dev", and for v2.0 "heldout" (held out of "train")."""
        if split not in ("train", "heldout", "dev") or (split == "heldout" and not self.v2):
            raise ValueError(f"task {self.name!r} has no split {split!r}")
        examples = read_squad(self._file(data_dir, "dev" if split == "dev" else "train"))
        if split == "dev" or not self.v2:
            return examples
        return [e for e in examples if _is_heldout(e.qid) == (split == "heldout")]

    def featurize(self, examples, tokenizer, settings, split):
        o = self.options(settings)
        features, _ = featurize(examples, tokenizer, settings.max_seq_length, o.doc_stride,
                                o.max_query_length, is_training=split == "train")
        host = tuple(k for k in features.arrays
                     if k not in MODEL_INPUTS and k not in features.label_keys)
        return dataclasses.replace(features, host_keys=host)

    def build_model(self, backbone, settings, head=None):
        o = self.options(settings)
        if self.head(settings) == "beam":
            return AlbertBeamQA(backbone, o.start_n_top, o.end_n_top,
                              dropout=settings.classifier_dropout)
        return AlbertSpanQA(backbone)

    def decode(self, split):
        """`(predictions, nbest, null_odds)` of a `SplitData` (`postprocess.decode_spans`)."""
        o = self.task_options
        return decode_spans(split.examples, split.features, split.outputs, o.n_best_size,
                            o.max_answer_length, head=self.head(self.settings))

    def helper_splits(self):
        """v2.0: the training questions held out to choose the no-answer threshold."""
        return ("heldout",) if self.v2 else ()

    def _heldout_threshold(self, heldout):
        if not heldout.examples:
            return None
        predictions, _, null_odds = self.decode(heldout)
        return best_null_threshold(predictions, null_odds, heldout.examples)

    def evaluate(self, scoring):
        examples = scoring.split.examples
        predictions, nbest, null_odds = self.decode(scoring.split)
        dataset = to_dataset(examples)
        if not self.v2:
            write_prediction_files(scoring.output_dir, predictions, nbest)
            return {**squad_eval.evaluate_v1(dataset, predictions), "questions": len(examples)}
        threshold = self._heldout_threshold(scoring.helpers["heldout"])
        used = 0.0 if threshold is None else threshold
        write_prediction_files(scoring.output_dir, apply_threshold(predictions, null_odds, used),
                               nbest, null_odds)
        official = squad_eval.evaluate_v2(dataset, predictions, null_odds, na_prob_thresh=used)
        results = {k: v for k, v in official.items() if not k.startswith("best_")}
        results.update({"threshold": used, "threshold_source":
                        HELDOUT_SOURCE if threshold is not None else "default 0"})
        results.update({f"dev_tuned_{k}": v for k, v in official.items() if k.startswith("best_")})
        return results

    def write_predictions(self, scoring):
        raise ValueError(f"task {self.name!r} has no unlabelled test split; its dev "
                         "predictions are written by the evaluation")

    def serving_module(self, model, tokenizer, settings, model_dir, export_options):
        from albert_tf.export.squad import SquadServing

        options = self.task_options
        if export_options is not None and export_options.null_threshold is not None:
            threshold, source = export_options.null_threshold, "given"
        else:
            threshold, source = heldout_threshold(model_dir)
        head = self.head(settings)
        module = SquadServing(model, tokenizer, settings.max_seq_length, options, head,
                              self.v2, threshold)
        info = {"inputs": ["question", "context"], "head": head,
                "doc_stride": options.doc_stride, "max_query_length": options.max_query_length,
                "max_answer_length": options.max_answer_length}
        if self.v2:
            info.update(null_threshold=threshold, null_threshold_source=source)
        return module, info


register(SquadTask(declarations()["squad"], "1.1"))
register(SquadTask(declarations()["squad_v2"], "2.0"))
