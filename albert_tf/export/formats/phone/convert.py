"""The phone model: token ids in, the scores (or the embedding) out, at batch 1.

MediaPipe's and the TFLite Task Library's BERT tasks find the three int32 inputs
by their metadata names and read the sequence length from the input's shape;
the tensor names are those of MediaPipe's own BERT models
(`serving_default_input_word_ids:0`, `..._input_mask:0`, `..._input_type_ids:0`).
The question-answering model names them `ids`, `mask`, `segment_ids` (the Task
Library's `BertQuestionAnswerer` documents those names).
"""

import tempfile

import tensorflow as tf

from albert_tf.export.formats.tflite.convert import configure
from albert_tf.layers.fused import plain_ops

SIGNATURE = "serving_default"
# The phone model's input names -> the serving module's.
MEDIAPIPE_INPUTS = {"input_word_ids": "token_ids", "input_mask": "padding_mask",
                    "input_type_ids": "segment_ids"}
QA_INPUTS = {"ids": "token_ids", "mask": "padding_mask", "segment_ids": "segment_ids"}


def classifier_scores(module, inputs):
    """`{"scores": (1, num_labels)}`: what the SavedModel's `probabilities` are
    (a softmax, or a sigmoid per label for a multi-label model)."""
    logits = module.run_model(inputs)["logits"]
    return {"scores": module.decode(logits)["probabilities"]}


def pooled_embedding(module, inputs):
    """`{"embedding": (1, hidden_dim)}`: the backbone's pooled `[CLS]` output."""
    model = module._predict.func  # the Keras task model (see `ServingModule`)
    with plain_ops():
        return {"embedding": model.backbone.pooled_output(inputs, training=False)}


def span_logits(module, inputs):
    """`{"end_logits", "start_logits"}` `(1, max_seq_length)`: the QA head's logits, every
    token outside the context (segment 1) masked as the host masks them (`p_mask`):
    the Task Library packs `[CLS] question [SEP] context [SEP]` and answers from the
    context only."""
    context = inputs["segment_ids"] * inputs["padding_mask"]
    outputs = module.run_model(dict(inputs, p_mask=1 - context))
    return {"end_logits": outputs["end_logits"], "start_logits": outputs["start_logits"]}


def convert(module, outputs, variant, names=None):
    """The TFLite flatbuffer (bytes) of `outputs(module, token inputs) -> dict`.

    variant: float32, float16 or dynamic_int8 (`albert_tf.export.formats.tflite`).
    names: the model's input names -> the serving module's (`MEDIAPIPE_INPUTS`).
    """
    names = names or MEDIAPIPE_INPUTS
    specs = [tf.TensorSpec([1, module.max_seq_length], tf.int32, name=n) for n in names]

    def serve(*tensors):
        return outputs(module, {names[n]: t for n, t in zip(names, tensors)})

    function = tf.function(serve, autograph=False,
                           input_signature=specs).get_concrete_function()
    fixed = tf.Module(name="albert_phone")
    fixed.captured_variables = list(function.variables)  # see `ServingModule`
    with tempfile.TemporaryDirectory() as tmp:
        tf.saved_model.save(fixed, tmp, signatures={SIGNATURE: function})
        converter = tf.lite.TFLiteConverter.from_saved_model(tmp, signature_keys=[SIGNATURE])
        configure(converter, variant, module, None)
        return converter.convert()
