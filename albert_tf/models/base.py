"""`TaskModel`: what every task model shares."""

import keras
import tensorflow as tf


class TaskModel(keras.Model):
    """A backbone plus a task head; subclasses define the head and loss.

    Subclasses take the backbone as their first constructor argument, set
    `self.backbone`, build their head layers in `__init__` (so the model is
    complete before training), and define `call`, `compute_loss`,
    `head_arguments` (their other constructor arguments, stated once: both
    `get_config` and `head_config` return them) and the class attribute
    `head_kind`.
    """

    # Entries of `head_config` beside the constructor arguments, which tell apart
    # heads one task can build (`{"head": "span"}`).
    head_labels = {}

    # What a student learns from a teacher's outputs (`albert_tf.distillation`):
    # output name -> "softmax" (tempered distributions over its last axis),
    # "sigmoid" (one tempered probability per unit) or "regression" (squared
    # error). Empty: the head cannot be distilled.
    distilled_outputs = {}

    def distillation_weights(self, x, y, name):
        """Weights of the rows of output `name` (every axis but the last) in
        its distillation loss, or None: every example counts alike."""
        return None

    def update_head(self, **changes):
        """Sets fields of the head config that are chosen once the model is trained
        (`tasks.base.Task.tune_head`: a multi-label decision threshold), so that
        the saved model folder carries them. A field the head has not is refused."""
        unknown = sorted(set(changes) - set(self.head_config()))
        if unknown:
            raise ValueError(f"the {self.head_kind} head has no field(s) {unknown}")
        for name, value in changes.items():
            setattr(self, name, value)

    @property
    def config(self):
        return self.backbone.config

    def head_arguments(self):
        """`{name: value}` of the constructor arguments after the backbone, as JSON
        values (lists, not tuples): what rebuilds the head on another backbone."""
        return {}

    def head_config(self):
        """The head as a fine-tuned model folder records it (`albert_tf_config.json`'s
        `head`): `head_labels` and the constructor arguments."""
        return {**self.head_labels, **self.head_arguments()}

    def get_config(self):
        # Keras' base config (name, trainable, dtype policy), the backbone and the
        # head's constructor arguments.
        config = super().get_config()
        config["backbone"] = keras.saving.serialize_keras_object(self.backbone)
        config.update(self.head_arguments())
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        backbone = keras.saving.deserialize_keras_object(config.pop("backbone"))
        return cls(backbone, **config)

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        # Keras' version takes a batch and averages it with strategy.reduce to
        # build the model symbolically; MultiWorkerMirroredStrategy cannot
        # reduce a dict of inputs (keras-team/keras#20329). Task models are
        # built at construction, so only the optimizer may be missing.
        if self.optimizer is not None and not self.optimizer.built:
            with self.distribute_strategy.scope():
                self.optimizer.build(self.trainable_variables)

    def train_step(self, data):
        logs = super().train_step(data)
        if isinstance(self.distribute_strategy, tf.distribute.MultiWorkerMirroredStrategy):
            # fit() averages each log over replicas with strategy.reduce(axis=0),
            # which MultiWorkerMirroredStrategy rejects for scalars: give it
            # one-element vectors (the average is the same number).
            logs = {k: tf.reshape(v, [1]) for k, v in logs.items()}
        return logs
