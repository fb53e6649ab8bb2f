"""SQuAD v1.1 (`squad`) and v2.0 (`squad_v2`): extractive question answering.

The data, windowing and decoding are the small pure functions of
`tasks.squad_data` and `tasks.squad_postprocess`; the metrics are the
official scripts' (`tasks.squad_eval`). For v2.0 the no-answer threshold is
chosen on questions held out of the training set (by a hash of their id),
and the dev set is reported at that threshold; the official script's
dev-tuned `best_exact`/`best_f1` (what the original ALBERT code reported,
an optimistic number) are reported beside it, named as such.
"""

import dataclasses
import os
import zlib

from albert_tf.models import AlbertSpanQA, AlbertV2QA
from tasks import register, squad_eval
from tasks.base import Task
from tasks.squad_data import featurize, read_squad
from tasks.squad_postprocess import (apply_threshold, best_null_threshold, decode_spans,
                                     write_prediction_files)

MODEL_INPUTS = ("token_ids", "segment_ids", "p_mask", "start_positions")


@dataclasses.dataclass(frozen=True)
class SquadOptions:
    doc_stride: int = 128
    max_query_length: int = 64
    n_best_size: int = 20
    max_answer_length: int = 30
    squad_head: str = "albert_v2"  # v2.0 only; v1.1 always uses the span head
    start_n_top: int = 5
    end_n_top: int = 5

    def __post_init__(self):
        if self.squad_head not in ("albert_v2", "cls_null"):
            raise ValueError(f"squad_head must be albert_v2 or cls_null, got {self.squad_head!r}")


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


class SquadTask(Task):
    eval_splits = ("dev",)
    test_splits = ()

    def __init__(self, name, version):
        self.name, self.version = name, version

    @property
    def v2(self):
        return self.version == "2.0"

    def options(self, settings):
        try:
            return SquadOptions(**settings.task_options)
        except TypeError:
            known = [f.name for f in dataclasses.fields(SquadOptions)]
            raise ValueError(f"unknown option for task {self.name!r} in "
                             f"{sorted(settings.task_options)}; known: {known}") from None

    def head(self, settings):
        return self.options(settings).squad_head if self.v2 else "cls_null"

    def _file(self, data_dir, split):
        if not data_dir:
            raise ValueError(f"--data_dir is required for task {self.name!r}")
        names = [f"{split}-v{self.version}.json", f"{split}.json"]
        for name in names:
            if os.path.isfile(os.path.join(data_dir, name)):
                return os.path.join(data_dir, name)
        raise FileNotFoundError(f"{data_dir}: no {' or '.join(names)}")

    def read_examples(self, data_dir, split):
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

    def build_model(self, backbone, settings):
        o = self.options(settings)
        if self.head(settings) == "albert_v2":
            return AlbertV2QA(backbone, o.start_n_top, o.end_n_top,
                              dropout=settings.classifier_dropout)
        return AlbertSpanQA(backbone)

    def decode(self, examples, features, outputs, settings):
        o = self.options(settings)
        return decode_spans(examples, features, outputs, o.n_best_size, o.max_answer_length,
                            head="v2" if self.head(settings) == "albert_v2" else "span")

    def _heldout_threshold(self, run):
        examples = run.examples("heldout")
        if not examples:
            return None
        predictions, _, null_odds = self.decode(examples, run.features("heldout"),
                                                run.outputs("heldout"), run.settings)
        return best_null_threshold(predictions, null_odds, examples)

    def evaluate(self, run, split):
        examples = run.examples(split)
        predictions, nbest, null_odds = self.decode(examples, run.features(split),
                                                    run.outputs(split), run.settings)
        dataset = to_dataset(examples)
        if not self.v2:
            write_prediction_files(run.output_dir, predictions, nbest)
            return {**squad_eval.evaluate_v1(dataset, predictions), "questions": len(examples)}
        threshold = self._heldout_threshold(run)
        used = 0.0 if threshold is None else threshold
        write_prediction_files(run.output_dir, apply_threshold(predictions, null_odds, used),
                               nbest, null_odds)
        official = squad_eval.evaluate_v2(dataset, predictions, null_odds, na_prob_thresh=used)
        results = {k: v for k, v in official.items() if not k.startswith("best_")}
        results.update({"threshold": used, "threshold_source":
                        "held-out training questions" if threshold is not None else "default 0"})
        results.update({f"dev_tuned_{k}": v for k, v in official.items() if k.startswith("best_")})
        return results

    def write_predictions(self, run, split):
        raise ValueError(f"task {self.name!r} has no unlabelled test split; its dev "
                         "predictions are written by the evaluation")

    def answer(self, model, tokenizer, settings, question, context):
        """The answer text (or "" for no answer) to one raw-text question."""
        import tensorflow as tf

        from albert_tf.training import engine
        from tasks.squad_data import SquadExample

        example = SquadExample("q", question, context)
        features = self.featurize([example], tokenizer, settings, "predict")
        outputs = engine.predict(model, tf.distribute.get_strategy(), features, 8,
                                 lambda lengths: settings.max_seq_length)
        predictions, _, null_odds = self.decode([example], features, outputs, settings)
        if self.v2 and null_odds["q"] > 0.0:
            return ""
        return predictions["q"]


register(SquadTask("squad", "1.1"))
register(SquadTask("squad_v2", "2.0"))
