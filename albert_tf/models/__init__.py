"""Task models: the backbone with a task head, its loss and its outputs."""

from albert_tf.models.classifier import AlbertClassifier
from albert_tf.models.multiple_choice import AlbertMultipleChoice
from albert_tf.models.pretraining import AlbertPretrainingModel
from albert_tf.models.question_answering import AlbertSpanQA, AlbertBeamQA

__all__ = ["AlbertClassifier", "AlbertMultipleChoice", "AlbertPretrainingModel", "AlbertSpanQA",
           "AlbertBeamQA"]
