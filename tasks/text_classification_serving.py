"""Serving a multi-label text classifier from raw text.

`serving_default` takes `text` (or `text_a`, `text_b` for pairs), string
`(batch_size,)`, packed as the host featurizes it
(`tasks.classification.encode_pairs`). Outputs:

- `probabilities` float32 `(batch_size, num_labels)`: a sigmoid per label, in
  the label order of the export's description;
- `predicted` bool `(batch_size, num_labels)`: probability >= the threshold;
- `labels` string `(batch_size, num_labels)`: the predicted labels first, in
  label order, then empty strings (TF Serving needs dense outputs);
- `num_labels` int32 `(batch_size,)`: how many of `labels` are predicted.

Multi-class and regression models use `albert_tf.export.classification`.
"""

import tensorflow as tf

from albert_tf.export.base import ServingModule, padded_length
from albert_tf.tokenizer import SegmentPacker


class MultiLabelServing(ServingModule):
    """Raw-text signatures of a multi-label `TextClassifier`.

    Args:
        model: the fine-tuned model; tokenizer: its in-graph tokenizer.
        max_seq_length: the fine-tuning run's; longer inputs are truncated.
        labels: label names in id order; threshold: the decision threshold.
        pair: whether the model takes two texts.
    """

    def __init__(self, model, tokenizer, max_seq_length, labels, threshold, pair):
        super().__init__(model, tokenizer, max_seq_length, name="albert_multi_label_serving")
        self.packer = SegmentPacker(max_seq_length, tokenizer.cls_id, tokenizer.sep_id,
                                    tokenizer.pad_id)
        self.labels, self.threshold = tuple(labels), float(threshold)
        if pair:
            self.define_signatures(self._serve_pair, ("text_a", "text_b"))
        else:
            self.define_signatures(self._serve_single, ("text",))

    def _serve_single(self, text):
        return self._outputs(self.packer(self.tokenizer(text)))

    def _serve_pair(self, text_a, text_b):
        return self._outputs(self.packer(self.tokenizer(text_a), self.tokenizer(text_b)))

    def _outputs(self, packed):
        length = padded_length(tf.reduce_sum(packed["padding_mask"], axis=1),
                               self.max_seq_length)
        logits = self.run_model({k: v[:, :length] for k, v in packed.items()})["logits"]
        probabilities = tf.sigmoid(logits)  # (batch, labels)
        predicted = probabilities >= self.threshold
        # Predicted labels first: a stable sort on "not predicted" keeps label order.
        order = tf.argsort(tf.cast(~predicted, tf.int32), axis=-1, stable=True)
        names = tf.gather(tf.constant(self.labels), order)
        chosen = tf.gather(predicted, order, batch_dims=1)
        return {"probabilities": probabilities, "predicted": predicted,
                "labels": tf.where(chosen, names, tf.constant("")),
                "num_labels": tf.reduce_sum(tf.cast(predicted, tf.int32), axis=-1)}
