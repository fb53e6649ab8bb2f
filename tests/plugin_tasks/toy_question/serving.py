"""Serving the toy task: `sentence` string (batch,) -> `is_question` bool, `probability`."""

import os

import tensorflow as tf

from albert_tf.export.base import ServingModule
from albert_tf.steps import SegmentPacker
from albert_tf.steps.packing import padded_length


class QuestionServing(ServingModule):
    web_decoder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "web_decoder.js")

    def __init__(self, model, tokenizer, max_seq_length, min_probability):
        super().__init__(model, tokenizer, max_seq_length, name="question_serving")
        self.min_probability = min_probability
        self.packer = SegmentPacker(max_seq_length, tokenizer.cls_id, tokenizer.sep_id,
                                    tokenizer.pad_id)
        self.define_signatures(self._serve, ("sentence",))

    def _serve(self, sentence):
        packed = self.packer(self.tokenizer(sentence))
        length = padded_length(tf.reduce_sum(packed["padding_mask"], 1), self.max_seq_length)
        logit = self.run_model({k: v[:, :length] for k, v in packed.items()})["logit"]
        probability = tf.sigmoid(logit)
        return {"is_question": probability >= self.min_probability, "probability": probability}

    def decoding_settings(self):
        return {"kind": "toy_question", "inputs": ["sentence"],
                "min_probability": float(self.min_probability)}
