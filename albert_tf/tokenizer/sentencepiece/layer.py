"""`AlbertTokenizer`: ALBERT's tokenization as a Keras layer of TensorFlow ops.

Runs in eager code, in `tf.function`, in `tf.data` and inside a SavedModel;
gives the same ids and offsets as `HostTokenizer` and the reference (tested),
ties between equal-score segmentations included (`graph_ties`).
"""

import base64

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.tokenizer.sentencepiece import graph_offsets, graph_ops, graph_ties
from albert_tf.tokenizer.graph_layer import StringLayer
from albert_tf.tokenizer.sentencepiece.vocab import SpmVocab


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertTokenizer(StringLayer):
    """ALBERT tokenization: normalization, SentencePiece, digit-comma rule.

    Args:
        proto: path to a SentencePiece `.model` file, or its bytes.
        lowercase: lowercase the text (uncased models); None detects it from
            the vocabulary; a value that contradicts the vocabulary raises
            `ValueError`.
        **kwargs: passed to `keras.layers.Layer` (e.g. `name`).

    Call arguments:
        inputs: string tensor (or Python `str`/list), scalar or `(batch_size,)`,
            UTF-8; invalid bytes are read as U+FFFD.

    Returns:
        int32 token ids without special tokens: a 1-D tensor for a scalar
        input, a `tf.RaggedTensor` `(batch_size, None)` for a batch.

    Example:
        >>> tok = AlbertTokenizer("tests/fixtures/spm/albert_30k_clean.model")
        >>> tok("This is a test").numpy().tolist()
        [48, 25, 21, 1289]
    """

    def __init__(self, proto, lowercase=None, **kwargs):
        super().__init__(**kwargs)
        self.vocab = SpmVocab(proto)
        self.lowercase = self.vocab.resolve_lowercase(lowercase)
        self._tables = graph_ops.GraphTables.build(
            self.lowercase, self.vocab.size, self.vocab.digit_comma_replacements())
        self._sentencepiece = tf_text.SentencepieceTokenizer(
            model=self.vocab.proto, out_type=tf.int32)
        self._ties = graph_ties.TieTables.build(self.vocab.viterbi_pieces())

    # Vocabulary (host-side Python values).

    proto = property(lambda self: self.vocab.proto)
    vocabulary_type = "sentencepiece"
    # A CJK ideograph or a punctuation mark may share a piece with its neighbours.
    standalone_words = False
    max_word_chars = None  # no limit on a word

    @property
    def max_token_chars(self):
        """The most characters one piece spells (its "▁" not counted), at least 1."""
        sp = self.vocab.sp
        return max(1, max(len(sp.id_to_piece(i).replace("\u2581", ""))
                          for i in range(self.vocab.size)))

    def id_to_piece(self, index):
        return self.vocab.sp.id_to_piece(self.checked_id(index))

    def piece_to_id(self, piece):
        """The piece's id; `unk_id` for a string that is not a piece."""
        return self.vocab.sp.piece_to_id(piece)

    # Tokenization.

    def call(self, inputs):
        scalar, strings = self._as_batch(inputs)
        text = graph_ops.normalize(strings, self._tables, self.lowercase)  # (batch,)
        ids, _, _ = self._pieces(text)
        ids = graph_ops.apply_rules(ids, self._tables)
        return ids[0] if scalar else ids

    def tokenize_with_offsets(self, inputs):
        """Ids and the characters each came from.

        Returns:
            `(ids, starts, ends)`, int32, shaped as `call`'s output; `starts`
            and `ends` are Unicode code point offsets into each ORIGINAL
            input string, so that `text[start:end]` is the text the token came
            from (see the package docstring for "▁" pieces and the
            digit-comma rule).
        """
        scalar, strings = self._as_batch(inputs)
        chars = graph_ops.Chars.decode(strings)
        emitted = graph_ops.emit(chars, self._tables, self.lowercase)
        result = graph_offsets.spans(chars, emitted, self._pieces(emitted.text), self._tables)
        return tuple(r[0] for r in result) if scalar else result

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
