"""Phone formats: `.tflite` models with TFLite Model Metadata, raw text in on the device.

    --formats=mediapipe                  mediapipe/model.tflite, MediaPipe's TextClassifier
    --formats=mediapipe:float16          mediapipe/model_float16.tflite
    --formats=mediapipe:dynamic_int8     mediapipe/model_dynamic_int8.tflite
    --formats=mediapipe_embedder         mediapipe/embedder.tflite, its TextEmbedder
    --formats=task_library_qa            task_library_qa/model.tflite, the TFLite Task
                                         Library's BertQuestionAnswerer

The metadata (`metadata`, on the vendored schema `metadata_schema`) carries the
tokenizer (the vocabulary type's `device_vocabulary`: a SentencePiece model whose
normalizer does ALBERT's preprocessing, or a WordPiece vocab.txt) and the labels,
so that the app passes raw text. `convert` makes the model, `writing` the files.
"""

import dataclasses

from albert_tf.export.formats import Format, register
from albert_tf.settings import Settings, setting


@dataclasses.dataclass(frozen=True, kw_only=True)
class PhoneOptions(Settings):
    mediapipe_label_names: str = setting(
        "", "The mediapipe format's label names, as the app shows them: a file naming each "
        "label, CLUE's labels.json (a JSON object a line with `label` and `label_desc`, e.g. "
        "TNEWS's news_story for 100) or one JSON object {label: name}, keyed by the served "
        "labels; empty: the served labels (a CLUE model's names from the labels.json "
        "its model folder keeps).")

CLASSIFIER_VARIANTS = {
    "float32": ("mediapipe/model.tflite", "no reduction"),
    "float16": ("mediapipe/model_float16.tflite", "float16 weights"),
    "dynamic_int8": ("mediapipe/model_dynamic_int8.tflite", "int8 weights, float activations"),
}
EMBEDDER_VARIANTS = {
    "float32": ("mediapipe/embedder.tflite", "no reduction"),
    "float16": ("mediapipe/embedder_float16.tflite", "float16 weights"),
    "dynamic_int8": ("mediapipe/embedder_dynamic_int8.tflite", "int8 weights"),
}

QA_VARIANTS = {
    "float32": ("task_library_qa/model.tflite", "no reduction"),
    "float16": ("task_library_qa/model_float16.tflite", "float16 weights"),
    "dynamic_int8": ("task_library_qa/model_dynamic_int8.tflite", "int8 weights"),
}


def _writer(name):
    def write(job, variant, path):
        from albert_tf.export.formats.phone import writing

        return getattr(writing, name)(job, variant, path)
    return write


def _checker(name):
    def check(module):
        from albert_tf.export.formats.phone import writing

        getattr(writing, name)(module)
    return check


def _described(variants):
    return "; ".join(f"{v}: {path}, {what}" for v, (path, what) in variants.items())


register(Format(
    "mediapipe", "a one-text classifier for MediaPipe's TextClassifier (Android, iOS, web): "
    "raw text in, the tokenizer and the labels in its metadata; "
    + _described(CLASSIFIER_VARIANTS),
    CLASSIFIER_VARIANTS, _writer("write_classifier"), prepare=_checker("check_classifier"),
    options_class=PhoneOptions))
register(Format(
    "mediapipe_embedder", "the pooled [CLS] output for MediaPipe's TextEmbedder, of any "
    "model: " + _described(EMBEDDER_VARIANTS),
    EMBEDDER_VARIANTS, _writer("write_embedder"), prepare=_checker("check_embedder")))
register(Format(
    "task_library_qa", "extractive question answering (squad, squad_v2, cmrc2018; the span "
    "head) for the TFLite Task Library's BertQuestionAnswerer: " + _described(QA_VARIANTS),
    QA_VARIANTS, _writer("write_question_answerer"),
    prepare=_checker("check_question_answerer")))
