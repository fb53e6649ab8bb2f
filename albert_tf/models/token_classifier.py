"""`AlbertTokenClassifier`: a tag for every word (NER, POS tagging, chunking)."""

import keras
import tensorflow as tf
from keras import ops

from albert_tf.layers.common import kernel_initializer
from albert_tf.models.base import TaskModel
from albert_tf.models.crf import LinearChainCRF
from albert_tf.models.losses import categorical_loss, check_loss, replica_mean

# Label of the tokens the loss ignores (a word's later sub-tokens, [CLS],
# [SEP], padding), as Hugging Face's token classification uses -100.
IGNORED = -100


def compact(values, mask):
    """The positions where `mask` is true, moved left in each row:
    `(values (batch, words, ...), lengths (batch,))`, padded with zeros."""
    ragged = tf.ragged.boolean_mask(values, mask)
    return ragged.to_tensor(), tf.cast(ragged.row_lengths(), tf.int32)


def scatter_back(compacted, lengths, mask):
    """`compact`'s inverse for int tags: (batch, words) -> (batch, seq), 0 elsewhere."""
    values = tf.RaggedTensor.from_tensor(compacted, lengths=lengths).flat_values
    return tf.scatter_nd(tf.where(mask), values, tf.shape(mask, out_type=tf.int64))


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertTokenClassifier(TaskModel):
    """A dense layer on every dropped-out token output; optionally a CRF over words.

    As Hugging Face's `AlbertForTokenClassification` (`classifier`) and
    BERT's NER recipe (Devlin et al. 2019, section 5.3): each word's tag is
    read from its first sub-token. With `crf=True` a `LinearChainCRF` scores
    the sequence of first sub-tokens (the words), trained by its
    log-likelihood and decoded by Viterbi. `head_loss` (focal, label smoothing:
    `albert_tf.models.losses`) is the softmax head's, None for cross-entropy;
    a CRF's loss is the sequence's log-likelihood, which takes neither.

    Inputs: the backbone's dict. Outputs: `{"logits": float32 (batch, seq, num_tags)}`.
    Labels (for `fit`): `{"label": (batch, seq)}` tag ids on first sub-tokens,
    `IGNORED` (-100) elsewhere.
    """

    head_kind = "token_classifier"
    token_outputs = ("logits",)

    def __init__(self, backbone, num_tags, dropout=0.1, crf=False, head_loss=None, **kwargs):
        super().__init__(**kwargs)
        self.backbone = backbone
        self.num_tags = num_tags
        self.dropout = dropout
        self.use_crf = crf
        self.head_loss = check_loss(head_loss)
        if crf and self.head_loss is not None:
            raise ValueError("a CRF head is trained by the tag sequence's log-likelihood; it "
                             f"takes no focal loss or label smoothing, got head_loss={head_loss!r}")
        backbone.pooler.trainable = False  # token outputs only: the pooler gets no gradient
        self.head_dropout = keras.layers.Dropout(dropout, dtype=backbone.dtype_policy)
        self.classifier = keras.layers.Dense(
            num_tags, kernel_initializer=kernel_initializer(backbone.config.initializer_range),
            dtype=backbone.dtype_policy, name="classifier")
        self.classifier.build((None, None, backbone.config.hidden_dim))
        self.crf = LinearChainCRF(num_tags, name="crf") if crf else None

    def call(self, inputs, training=None):
        sequence = self.backbone(inputs, training=training)["sequence_output"]
        logits = self.classifier(self.head_dropout(sequence, training=training))
        return {"logits": ops.cast(logits, "float32")}

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        labels = tf.cast(y["label"], tf.int32)
        logits = y_pred["logits"]
        tagged = labels != IGNORED
        if self.crf is not None:
            potentials, lengths = compact(logits, tagged)
            tags, _ = compact(labels, tagged)
            return replica_mean(-self.crf.log_likelihood(potentials, tags, lengths))
        safe = tf.where(tagged, labels, tf.zeros_like(labels))
        per_token = categorical_loss(safe, logits, self.head_loss)
        weights = tf.cast(tagged, tf.float32)
        # Mean over this replica's tagged tokens, scaled for the replicas' sum.
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        return tf.reduce_sum(per_token * weights) / tf.maximum(
            tf.reduce_sum(weights), 1.0) / replicas

    # With a CRF, the emission scores: the transitions are learnt from the labels.
    distilled_outputs = {"logits": "softmax"}

    def distillation_weights(self, x, y, name):
        # The tokens the loss reads: each word's first sub-token.
        return tf.cast(tf.cast(y["label"], tf.int32) != IGNORED, tf.float32)

    def decode(self, logits, word_mask):
        """Tag ids (batch, seq) int32 at the positions of `word_mask` (first
        sub-tokens): Viterbi over them with a CRF, else each one's argmax; 0 elsewhere."""
        word_mask = tf.cast(word_mask, tf.bool)
        if self.crf is None:
            best = tf.argmax(logits, axis=-1, output_type=tf.int32)
            return tf.where(word_mask, best, tf.zeros_like(best))
        potentials, lengths = compact(logits, word_mask)
        return scatter_back(self.crf.decode(potentials, lengths), lengths, word_mask)

    def head_arguments(self):
        return {"num_tags": self.num_tags, "dropout": self.dropout, "crf": self.use_crf,
                "head_loss": self.head_loss}
