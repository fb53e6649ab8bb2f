"""`AlbertTokenizer`: ALBERT's tokenization as a Keras layer of TensorFlow ops.

Runs in eager code, in `tf.function`, in `tf.data` and inside a SavedModel;
gives the same ids and offsets as `HostTokenizer` and the reference (tested),
ties between equal-score segmentations included (`graph_ties`).
"""

import base64
import hashlib

import keras
import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow.python.trackable import resource
from tensorflow_text.python.ops.sentencepiece_tokenizer import gen_sentencepiece_tokenizer

from albert_tf.tokenizer.graph_layer import StringLayer
from albert_tf.tokenizer.sentencepiece import graph_offsets, graph_ops, graph_ties
from albert_tf.tokenizer.sentencepiece.vocab import SentencePieceIds


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertTokenizer(SentencePieceIds, StringLayer):
    """ALBERT tokenization: normalization, SentencePiece, digit-comma rule.

    Args:
        proto, lowercase: the model and the casing (see `SentencePieceIds`).
        **kwargs: passed to `keras.layers.Layer` (e.g. `name`).

    Called on strings (see `StringLayer.call`), it gives their ids.

    Example:
        >>> tok = AlbertTokenizer("tests/fixtures/spm/albert_30k_clean.model")
        >>> tok("This is a test").numpy().tolist()
        [48, 25, 21, 1289]
    """

    # A CJK ideograph or a punctuation mark may share a piece with its neighbours.
    standalone_words = False
    max_word_chars = None  # no limit on a word

    def __init__(self, proto, lowercase=None, **kwargs):
        super().__init__(**kwargs)
        self.load_vocabulary(proto, lowercase)
        self._tables = graph_ops.GraphTables.build(
            self.lowercase, self.vocab.size, self.vocab.digit_comma_replacements())
        self._sentencepiece = tf_text.SentencepieceTokenizer(
            model=self.vocab.proto, out_type=tf.int32)
        self._sentencepiece._model_resource = _SharedModel(self.vocab.proto)
        self._ties = graph_ties.TieTables.build(self.vocab.viterbi_pieces())

    # Tokenization (the offsets: "▁" pieces and the digit-comma rule as the
    # package docstring says).

    def _tokenize(self, strings):
        text = graph_ops.normalize(strings, self._tables, self.lowercase)  # (batch,)
        ids, _, _ = self._pieces(text)
        return graph_ops.apply_rules(ids, self._tables)

    def _tokenize_with_offsets(self, strings):
        chars = graph_ops.Chars.decode(strings)
        emitted = graph_ops.emit(chars, self._tables, self.lowercase)
        return graph_offsets.spans(chars, emitted, self._pieces(emitted.text), self._tables)

    def _pieces(self, text):
        """SentencePiece pieces of normalized text, ties decided as the reference
        does: `(ids, begins, ends)`, ragged (batch, None), byte offsets."""
        return graph_ties.repair(text, self._sentencepiece.tokenize_with_offsets(text),
                                 self._ties)

    # Config: the model bytes travel inside the config, base64-encoded.

    def get_config(self):
        config = super().get_config()
        config.update({"proto": base64.b64encode(self.vocab.proto).decode("ascii"),
                       "lowercase": self.lowercase})
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("proto"), str):
            config["proto"] = base64.b64decode(config["proto"], validate=True)
        return cls(**config)


class _SharedModel(resource.TrackableResource):
    """The SentencePiece model resource, named by its model's hash.

    tensorflow-text creates it as a resource private to the eager kernel that
    made it, which TensorFlow deletes whenever the eager kernel cache is
    cleared, and setting a random seed clears it (`tf.random.set_seed`,
    `keras.utils.set_random_seed`): a tokenizer made before a seed was set then
    fails with "Resource ... does not exist". A named resource lives on; two
    tokenizers of one model share it, as they may.
    """

    def __init__(self, model):
        super().__init__()
        self._model = model
        self._shared_name = "albert_tf_spm_" + hashlib.sha256(model).hexdigest()[:24]
        _ = self.resource_handle  # created now

    def _create_resource(self):
        return gen_sentencepiece_tokenizer.sentencepiece_op(model=self._model,
                                                            shared_name=self._shared_name)
