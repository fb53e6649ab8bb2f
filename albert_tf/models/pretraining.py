"""`AlbertPretrainingModel`: the backbone with its MLM and SOP heads."""

import keras
from keras import ops

from albert_tf.layers.mlm_head import MaskedLMHead
from albert_tf.layers.sop_head import SentenceOrderHead
from albert_tf.models.base import TaskModel
from albert_tf.models.losses import replica_mean, sparse_cross_entropy


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertPretrainingModel(TaskModel):
    """ALBERT with the two heads that released checkpoints contain.

    Called on the backbone's input dict, optionally with `mask_positions`
    (int32 `(batch_size, num_predictions)`): the MLM head then runs only at
    those positions, as in pretraining; without it, at every position.

    Returns the backbone's outputs plus:
        mlm_logits: float32 `(batch_size, num_predictions or seq_length, vocabulary_size)`.
        sop_logits: float32 `(batch_size, 2)`.

    Training (`fit`) labels: `mask_ids`, `mask_weights` (batch, num_predictions)
    and `sop_label` (batch,). The loss is the MLM cross-entropy averaged over
    real predictions plus the SOP cross-entropy, as in the reference
    `run_pretraining.py`; MLM and sentence accuracy are logged as metrics,
    the latter named by `sentence_task`, the task of the labels it is trained
    on ("sop", or "nsp" for random-next pairs: `nsp_accuracy`, `nsp_baseline`).
    The head (`sop_head`, as released checkpoints name it) is the same for both.
    """

    head_kind = "pretraining"
    head_labels = {"heads": ["mlm", "sop"]}

    def __init__(self, backbone, sentence_task="sop", **kwargs):
        super().__init__(**kwargs)
        config = backbone.config
        self.backbone = backbone
        self.sentence_task = sentence_task
        self.mlm_head = MaskedLMHead(
            backbone.token_embedding, hidden_dim=config.hidden_dim,
            activation=config.activation, layer_norm_epsilon=config.layer_norm_epsilon,
            initializer_range=config.initializer_range,
            projection=(backbone.embeddings.projection
                        if config.embedding_projection == "word" else None),
            dtype=backbone.dtype_policy, name="mlm_head")
        self.sop_head = SentenceOrderHead(
            config.hidden_dim, initializer_range=config.initializer_range,
            dtype=backbone.dtype_policy, name="sop_head")
        self.mlm_head.build((None, None, config.hidden_dim))
        self.sop_head.build((None, config.hidden_dim))
        self.mlm_accuracy = keras.metrics.Mean(name="mlm_accuracy")
        self.sentence_accuracy = keras.metrics.Mean(name=f"{sentence_task}_accuracy")
        # What always answering the more frequent label would score on the same
        # pairs: a head stuck at the majority shows sop_accuracy == sop_baseline.
        self.sentence_baseline = MajorityShare(name=f"{sentence_task}_baseline")

    def head_arguments(self):
        return {"sentence_task": self.sentence_task}

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

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        weights = ops.cast(y["mask_weights"], "float32")  # (batch, predictions)
        mlm = sparse_cross_entropy(y["mask_ids"], y_pred["mlm_logits"])  # (batch, predictions)
        total = ops.sum(weights)
        mlm_loss = ops.sum(mlm * weights) / ops.maximum(total, 1.0)
        sop = sparse_cross_entropy(y["sop_label"], y_pred["sop_logits"])
        hits = ops.cast(ops.equal(ops.argmax(y_pred["mlm_logits"], -1),
                                  ops.cast(y["mask_ids"], "int32")), "float32")
        self.mlm_accuracy.update_state(ops.sum(hits * weights) / ops.maximum(total, 1.0))
        self.sentence_accuracy.update_state(ops.mean(ops.cast(ops.equal(
            ops.argmax(y_pred["sop_logits"], -1), ops.cast(y["sop_label"], "int32")), "float32")))
        self.sentence_baseline.update_state(y["sop_label"])
        # The MLM mean is per replica (over its own predictions), like the
        # reference's per-core loss; both terms are averaged over replicas.
        return replica_mean(ops.reshape(mlm_loss, (1,))) + replica_mean(sop)

    @property
    def metrics(self):
        return [*super().metrics, self.mlm_accuracy, self.sentence_accuracy,
                self.sentence_baseline]


class MajorityShare(keras.metrics.Metric):
    """The share of the more frequent of two labels (0/1) seen since the last reset."""

    def __init__(self, name="majority_share", **kwargs):
        super().__init__(name=name, **kwargs)
        self.ones = self.add_variable(shape=(), initializer="zeros", name="ones")
        self.count = self.add_variable(shape=(), initializer="zeros", name="count")

    def update_state(self, labels, sample_weight=None):
        labels = ops.cast(ops.reshape(labels, (-1,)), "float32")
        self.ones.assign_add(ops.sum(labels))
        self.count.assign_add(ops.cast(ops.shape(labels)[0], "float32"))

    def result(self):
        share = self.ones / ops.maximum(self.count, 1.0)
        return ops.maximum(share, 1.0 - share)
