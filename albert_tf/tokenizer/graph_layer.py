"""What every in-graph tokenizer is: a Keras layer whose inputs are strings."""

import keras
import tensorflow as tf

from albert_tf.tokenizer.base import VocabularyIds


class StringLayer(VocabularyIds, keras.layers.Layer):
    """A Keras layer taking a string scalar or a `(batch_size,)` batch of
    strings and giving int32 outputs; the base of each vocabulary type's
    in-graph tokenizer (`sentencepiece.layer.AlbertTokenizer`, `wordpiece.layer.WordPieceTokenizer`).
    """

    def __init__(self, **kwargs):
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        # Strings are not backend tensors: skip Keras' input conversion.
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True

    def _as_batch(self, inputs):
        """`(scalar, strings)`: whether `inputs` was one string, and it as a 1-D
        string tensor; a non-string or higher-rank input is refused naming the layer."""
        owner = type(self).__name__
        inputs = tf.convert_to_tensor(inputs)
        if inputs.dtype != tf.string:
            raise ValueError(f"{owner} expects strings, got dtype {inputs.dtype.name}")
        if inputs.shape.rank not in (0, 1):
            raise ValueError(f"{owner} expects a scalar or a 1-D batch of strings, "
                             f"got shape {inputs.shape}")
        return inputs.shape.rank == 0, tf.reshape(inputs, [-1])
