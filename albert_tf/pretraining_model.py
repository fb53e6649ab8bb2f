"""`AlbertPretrainingModel`: the backbone with its MLM and SOP heads."""

import keras
from keras import ops

from albert_tf.backbone import AlbertBackbone
from albert_tf.layers.mlm_head import MaskedLMHead
from albert_tf.layers.sop_head import SentenceOrderHead


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertPretrainingModel(keras.Model):
    """ALBERT with the two heads that released checkpoints contain.

    Called on the backbone's input dict, optionally with `mask_positions`
    (int32 `(batch_size, num_predictions)`): the MLM head then runs only at
    those positions, as in pretraining; without it, at every position.

    Returns the backbone's outputs plus:
        mlm_logits: float32 `(batch_size, num_predictions or seq_length, vocabulary_size)`.
        sop_logits: float32 `(batch_size, 2)`.
    """

    def __init__(self, backbone, **kwargs):
        super().__init__(**kwargs)
        config = backbone.config
        self.backbone = backbone
        self.mlm_head = MaskedLMHead(
            backbone.token_embedding, hidden_dim=config.hidden_dim,
            activation=config.activation, layer_norm_epsilon=config.layer_norm_epsilon,
            initializer_range=config.initializer_range, dtype=backbone.dtype_policy,
            name="mlm_head")
        self.sop_head = SentenceOrderHead(
            config.hidden_dim, initializer_range=config.initializer_range,
            dtype=backbone.dtype_policy, name="sop_head")
        self.mlm_head.build((None, None, config.hidden_dim))
        self.sop_head.build((None, config.hidden_dim))

    @property
    def config(self):
        return self.backbone.config

    def call(self, inputs, training=None):
        outputs = self.backbone(inputs, training=training)
        sequence = outputs["sequence_output"]
        if "mask_positions" in inputs:
            # (batch, num_predictions, H)
            sequence = ops.take_along_axis(
                sequence, ops.cast(inputs["mask_positions"], "int32")[:, :, None], axis=1)
        return {
            **outputs,
            "mlm_logits": self.mlm_head(sequence),
            "sop_logits": self.sop_head(outputs["pooled_output"]),
        }

    def get_config(self):
        return {"backbone": keras.saving.serialize_keras_object(self.backbone),
                "name": self.name}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        backbone = keras.saving.deserialize_keras_object(config.pop("backbone"))
        return cls(backbone, **config)
