"""The toy task: reading, featurization, head, evaluation and serving."""

import json
import os

import numpy as np

from albert_tf.data import Features
from albert_tf.data.mapped import map_rows, ragged_rows
from albert_tf.steps import SegmentPacker
from albert_tf.tasks import declarations, register
from albert_tf.tasks.base import Task
from albert_tf.tasks.toy_question.model import QuestionHead


class QuestionTask(Task):
    test_splits = ()
    primary_metric = "accuracy"

    def read_examples(self, data_dir, split, options=None):
        with open(os.path.join(data_dir, f"{split}.jsonl"), encoding="utf-8") as f:
            rows = [json.loads(line) for line in f]
        return [r for r in rows if len(r["sentence"].split()) >= options.min_words]

    def featurize(self, examples, tokenizer, settings, split):
        # The serving module's packer, mapped over the split's ids.
        packer = SegmentPacker(settings.max_seq_length, tokenizer.cls_id, tokenizer.sep_id,
                               tokenizer.pad_id)
        ids = ragged_rows(tokenizer.encode_batch([e["sentence"] for e in examples]))
        arrays = map_rows(packer, (ids,), ("token_ids", "segment_ids", "padding_mask"))
        lengths = arrays.pop("padding_mask").sum(axis=1, dtype=np.int32)
        arrays["label"] = np.array([int(e["question"]) for e in examples], np.int32)
        return Features(arrays, lengths, label_keys=("label",))

    def build_model(self, backbone, settings, head=None):
        return QuestionHead(backbone, dropout=settings.classifier_dropout)

    def evaluate(self, scoring):
        labels = scoring.split.features.arrays["label"]
        predicted = scoring.split.outputs["logit"] > 0
        return {"accuracy": float(np.mean(predicted == labels)), "examples": len(labels)}

    def write_predictions(self, scoring):
        raise ValueError("no test split")

    def serving_module(self, model, tokenizer, settings, model_dir, export_options):
        from albert_tf.tasks.toy_question.serving import QuestionServing

        module = QuestionServing(model, tokenizer, settings.max_seq_length,
                                 export_options.min_probability)
        return module, {"inputs": ["sentence"],
                        "min_probability": export_options.min_probability}


register(QuestionTask(declarations()["toy_question"]))
