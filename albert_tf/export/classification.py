"""Serving a sentence (pair) classifier or regressor from raw text.

`serving_default` takes `text` (one-sentence tasks) or `text_a`, `text_b`
(pair tasks), string `(batch_size,)`, and packs `[CLS] a [SEP] (b [SEP])` with
the `SegmentPacker` that featurized its training data (`tasks.long_inputs`),
cut to the batch's longest example; or, exported from a `--long_inputs=window` run
(`window_stride` given), packs every text into overlapping windows with the
`WindowPacker` that featurized its training data, runs the model on all
windows of the batch and averages each text's windows' logits before the
outputs below. Outputs:

- classification: `label` string, `label_id` int32 `(batch_size,)` (the
  argmax), `probabilities` float32 `(batch_size, num_classes)` (a softmax of
  the logits);
- regression (STS-B): `score` float32 `(batch_size,)`, the raw output (the
  model was trained on scores in [0, 5] but is not clipped here);
- multi-label (`MultiLabelServing`): `probabilities` float32 `(batch_size,
  num_labels)`, a sigmoid per label in label order; `predicted` bool, the same
  shape, probability >= the threshold; `labels` string, the same shape, the
  predicted labels first (in label order), then empty strings (TF Serving
  needs dense outputs); `num_predicted` int32 `(batch_size,)`, how many of
  `labels` are predicted (`num_labels` is the size of the label set).
"""

import tensorflow as tf

from albert_tf.steps import text_limit
from albert_tf.export.base import WEB_ASSETS, ServingModule
from albert_tf.steps.packing import padded_length
from albert_tf.steps import SegmentPacker, WindowPacker, window_mean


class ClassifierServing(ServingModule):
    """Raw-text signatures of an `AlbertClassifier`.

    Args:
        model: the fine-tuned `AlbertClassifier` (float32).
        tokenizer: its `AlbertTokenizer`.
        max_seq_length: the fine-tuning run's; longer inputs are truncated.
        labels: label names in id order, or None for regression.
        pair: whether the task takes two texts.
        window_stride: None: truncate longer inputs; an int: score them in
            windows (`albert_tf.steps.windows`) of this stride.
    """

    web_decoder = WEB_ASSETS / "decoder_classification.js"

    def __init__(self, model, tokenizer, max_seq_length, labels, pair,
                 name="albert_classifier_serving", window_stride=None):
        super().__init__(model, tokenizer, max_seq_length, name=name)
        specials = (tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)
        self.packer = SegmentPacker(max_seq_length, *specials)
        self.windows = None if window_stride is None else \
            WindowPacker(max_seq_length, window_stride, *specials)
        self.labels = None if labels is None else tuple(labels)
        self.pair = pair
        if pair:
            self.define_signatures(self._serve_pair, ("text_a", "text_b"))
        else:
            self.define_signatures(self._serve_single, ("text",))

    def _tokenized(self, text):
        # At most max_seq_length - 2 tokens of a text reach the model; scored in
        # windows, at most `windowed_tokens` (bounded memory).
        tokens = self.max_seq_length if self.windows is None else self.windowed_tokens
        return self.tokenizer(text_limit.cut(text, self.tokenizer, tokens))

    def _serve_single(self, text):
        return self._outputs(self._tokenized(text))

    def _serve_pair(self, text_a, text_b):
        return self._outputs(self._tokenized(text_a), self._tokenized(text_b))

    def _outputs(self, *ids):
        packed = (self.packer if self.windows is None else self.windows)(*ids)
        length = padded_length(tf.reduce_sum(packed["padding_mask"], axis=1),
                               self.max_seq_length)
        logits = self.run_model({k: packed[k][:, :length] for k in
                                 ("token_ids", "segment_ids", "padding_mask")})["logits"]
        if self.windows is not None:  # (windows, classes) -> (batch, classes)
            first = ids[0]
            texts = first.nrows() if isinstance(first, tf.RaggedTensor) else tf.shape(first)[0]
            logits = window_mean(logits, packed["text"], texts)
        return self.decode(logits)

    def text_windows(self):
        if self.windows is None:
            return None
        # A pair windows its longer text beside at most half the budget of the other.
        budget = self.max_seq_length - (3 if self.pair else 2)
        room = budget - budget // 2 if self.pair else budget
        stride = self.windows.stride
        return {"inputs": ["text_a", "text_b"] if self.pair else ["text"], "room": room,
                "step": min(room, stride) if stride else max(room // 2, 1),
                "max_tokens": self.windowed_tokens}

    def decoding_settings(self):
        """Inputs, labels, how many tokens of a text are read (`text_tokens`), and
        for windowed exports the windows' stride (`window_stride`, else None)."""
        kind = "regression" if self.labels is None else "classification"
        windowed = self.windows is not None
        return {"kind": kind, "inputs": ["text_a", "text_b"] if self.pair else ["text"],
                "labels": None if self.labels is None else list(self.labels),
                "text_tokens": int(self.windowed_tokens if windowed else self.max_seq_length),
                "window_stride": int(self.windows.stride) if windowed else None}

    def decode(self, logits):
        """The outputs from the logits `(batch_size, num_classes)`."""
        if self.labels is None:
            return {"score": logits[:, 0]}
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)  # (batch,)
        return {"label": tf.gather(tf.constant(self.labels), label_id),
                "label_id": label_id,
                "probabilities": tf.nn.softmax(logits, axis=-1)}


class MultiLabelServing(ClassifierServing):
    """Raw-text signatures of a multi-label classifier (a sigmoid per label).

    Args: as `ClassifierServing`'s, and `threshold`, the decision threshold.
    """

    def __init__(self, model, tokenizer, max_seq_length, labels, threshold, pair,
                 window_stride=None):
        super().__init__(model, tokenizer, max_seq_length, labels, pair,
                         name="albert_multi_label_serving", window_stride=window_stride)
        self.threshold = float(threshold)

    def decoding_settings(self):
        return dict(super().decoding_settings(), kind="multi_label", threshold=self.threshold)

    def decode(self, logits):
        probabilities = tf.sigmoid(logits)  # (batch, labels)
        predicted = probabilities >= self.threshold
        # Predicted labels first: a stable sort on "not predicted" keeps label order.
        order = tf.argsort(tf.cast(~predicted, tf.int32), axis=-1, stable=True)
        names = tf.gather(tf.constant(self.labels), order)
        chosen = tf.gather(predicted, order, batch_dims=1)
        return {"probabilities": probabilities, "predicted": predicted,
                "labels": tf.where(chosen, names, tf.constant("")),
                "num_predicted": tf.reduce_sum(tf.cast(predicted, tf.int32), axis=-1)}
