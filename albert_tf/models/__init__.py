"""Task models: the backbone with a task head, its loss and its outputs."""

from albert_tf.models.classifier import AlbertClassifier

__all__ = ["AlbertClassifier"]
