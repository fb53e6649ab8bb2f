"""`WordPieceTokenizer`: BERT's WordPiece tokenization as a Keras layer of TensorFlow ops.

Runs in eager code, in `tf.function`, in `tf.data` and inside a SavedModel;
gives the same ids and offsets as `HostWordPieceTokenizer` and the reference
(tested). `BasicTokenizer` is `wordpiece.graph` (tensorflow-text's
`BertTokenizer` is not exact: it lowercases by NFKC case folding, which turns
full-width "！" into "!"); the greedy longest-match-first search is
tensorflow-text's `FastWordpieceTokenizer` on the words it cuts, with
BERT's 200-character word limit applied here (the op counts bytes).
"""

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.tokenizer.graph_layer import StringLayer
from albert_tf.tokenizer.wordpiece import graph as wordpiece_graph
from albert_tf.tokenizer.wordpiece.vocab import CONTINUATION, MAX_WORD_CHARS, WordPieceIds

# UTF-8 takes at most 4 bytes a character: the op never rejects a word of
# MAX_WORD_CHARS characters or fewer.
_MAX_WORD_BYTES = 4 * MAX_WORD_CHARS


@keras.saving.register_keras_serializable(package="albert_tf")
class WordPieceTokenizer(WordPieceIds, StringLayer):
    """BERT's WordPiece tokenization (`FullTokenizer`): `BasicTokenizer`, then WordPiece.

    Args:
        vocabulary, lowercase: the vocabulary and the casing (see `WordPieceIds`).
        **kwargs: passed to `keras.layers.Layer` (e.g. `name`).

    Called on strings (see `StringLayer.call`), it gives their ids; the U+FFFD
    that invalid bytes are read as is dropped, as BERT drops it.

    Example:
        >>> tok = WordPieceTokenizer("tests/fixtures/wordpiece/vocab.txt")
        >>> tok("ALBERT模型！").numpy().tolist()
        [9266, 10491, 3563, 1798, 8013]
    """

    # BERT's BasicTokenizer makes every CJK ideograph and punctuation mark a word.
    standalone_words = True
    # A longer word is one unknown token (BERT's rule).
    max_word_chars = MAX_WORD_CHARS

    def __init__(self, vocabulary, lowercase=None, **kwargs):
        super().__init__(**kwargs)
        self.load_vocabulary(vocabulary, lowercase)
        self._tables = wordpiece_graph.WordPieceTables.build(self.vocab.tokens, self.lowercase)
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=list(self.vocab.tokens), suffix_indicator=CONTINUATION,
            max_bytes_per_word=_MAX_WORD_BYTES, token_out_type=tf.int32,
            unknown_token=self.vocab.tokens[self.vocab.special_ids["unk"]],
            no_pretokenization=True, support_detokenization=False)

    # Tokenization.

    def _pieces(self, strings):
        """`(words, pieces)`: the words of a batch (`wordpiece_graph.split_words`)
        and the ids of each word, ragged `(num_words, None)`."""
        words = wordpiece_graph.split_words(strings, self._tables, self.lowercase)
        too_long = words.length > MAX_WORD_CHARS
        pieces = self._wordpiece.tokenize(tf.where(too_long, "", words.text))
        unknown = tf.RaggedTensor.from_row_lengths(
            tf.fill([tf.reduce_sum(tf.cast(too_long, tf.int32))], self.unk_id),
            tf.cast(too_long, tf.int64))
        return words, tf.concat([pieces, unknown], axis=1)

    def _by_row(self, words, pieces, values):
        """`values` (one per token, flat) as ragged `(batch_size, None)`."""
        rows = tf.gather(words.row, tf.cast(pieces.value_rowids(), tf.int32))
        return tf.RaggedTensor.from_value_rowids(values, tf.cast(rows, tf.int64),
                                                 nrows=tf.cast(words.num_rows, tf.int64))

    def _tokenize(self, strings):
        words, pieces = self._pieces(strings)
        return self._by_row(words, pieces, pieces.flat_values)

    def _tokenize_with_offsets(self, strings):
        words, pieces = self._pieces(strings)
        starts, ends = wordpiece_graph.piece_offsets(words, pieces, self.unk_id, self._tables)
        return tuple(self._by_row(words, pieces, v) for v in (pieces.flat_values, starts, ends))

    # Config: the tokens travel inside the config.

    def get_config(self):
        config = super().get_config()
        config.update({"vocabulary": list(self.vocab.tokens), "lowercase": self.lowercase})
        return config
