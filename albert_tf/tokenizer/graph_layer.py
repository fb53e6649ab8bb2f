"""What every in-graph tokenizer is: a Keras layer whose inputs are strings
(`StringLayer`); and what it shares with the packers, whose inputs are ragged
ids (`accept_raw_inputs`)."""

import keras
import tensorflow as tf

from albert_tf.tokenizer.base import VocabularyIds


def accept_raw_inputs(layer):
    """Lets the Keras layer `layer` be called on strings, ragged tensors and Python
    lists, which are not backend tensors (Keras' input conversion skipped), and
    marks it built: such a layer has no weights."""
    layer._convert_input_args = False
    layer._allow_non_tensor_positional_args = True
    layer.built = True


class StringLayer(VocabularyIds, keras.layers.Layer):
    """A Keras layer taking a string scalar or a `(batch_size,)` batch of
    strings and giving int32 outputs; the base of each vocabulary type's
    in-graph tokenizer (`sentencepiece.layer.AlbertTokenizer`,
    `wordpiece.layer.WordPieceTokenizer`).

    A subclass gives `_tokenize(strings)` (ragged ids `(batch_size, None)` of a
    1-D batch) and `_tokenize_with_offsets(strings)` (those ids and their
    starts and ends); this class takes a scalar or a batch around them.
    """

    def __init__(self, **kwargs):
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        accept_raw_inputs(self)

    def call(self, inputs):
        """Token ids of `inputs`, without special tokens.

        Args:
            inputs: string tensor (or Python `str`/list), scalar or
                `(batch_size,)`, UTF-8; invalid bytes are read as U+FFFD.

        Returns:
            int32: a 1-D tensor for a scalar input, a `tf.RaggedTensor`
            `(batch_size, None)` for a batch.
        """
        scalar, strings = self._as_batch(inputs)
        ids = self._tokenize(strings)
        return ids[0] if scalar else ids

    def tokenize_with_offsets(self, inputs):
        """Ids and the characters each came from.

        Returns:
            `(ids, starts, ends)`, int32, shaped as `call`'s output; `starts`
            and `ends` are Unicode code point offsets into each ORIGINAL
            input string, so that `text[start:end]` is the text the token came
            from (see the package docstring for each type's rules).
        """
        scalar, strings = self._as_batch(inputs)
        result = self._tokenize_with_offsets(strings)
        return tuple(r[0] for r in result) if scalar else result

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
