"""Task models: the backbone with a task head, its loss and its outputs."""

from albert_tf.models.classifier import AlbertClassifier
from albert_tf.models.crf import LinearChainCRF
from albert_tf.models.multiple_choice import AlbertMultipleChoice
from albert_tf.models.pretraining import AlbertPretrainingModel
from albert_tf.models.question_answering import AlbertSpanQA, AlbertBeamQA
from albert_tf.models.token_classifier import AlbertTokenClassifier

__all__ = ["AlbertClassifier", "AlbertMultipleChoice", "AlbertPretrainingModel", "AlbertSpanQA",
           "AlbertBeamQA",
           "AlbertTokenClassifier", "LinearChainCRF"]
