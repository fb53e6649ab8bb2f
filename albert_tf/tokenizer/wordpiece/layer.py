"""`WordPieceTokenizer`: BERT's WordPiece tokenization as a Keras layer of TensorFlow ops.

Runs in eager code, in `tf.function`, in `tf.data` and inside a SavedModel;
gives the same ids and offsets as `HostWordPieceTokenizer` and the reference
(tested). `BasicTokenizer` is `wordpiece_graph` (tensorflow-text's
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
from albert_tf.tokenizer.wordpiece.vocab import CONTINUATION, MAX_WORD_CHARS, WordPieceVocab

# UTF-8 takes at most 4 bytes a character: the op never rejects a word of
# MAX_WORD_CHARS characters or fewer.
_MAX_WORD_BYTES = 4 * MAX_WORD_CHARS


@keras.saving.register_keras_serializable(package="albert_tf")
class WordPieceTokenizer(StringLayer):
    """BERT's WordPiece tokenization (`FullTokenizer`): `BasicTokenizer`, then WordPiece.

    Args:
        vocabulary: path to a `vocab.txt`, or its tokens in id order.
        lowercase: lowercase and strip accents (uncased models); None detects
            it from the vocabulary; a value that contradicts the vocabulary
            raises `ValueError`.
        **kwargs: passed to `keras.layers.Layer` (e.g. `name`).

    Call arguments:
        inputs: string tensor (or Python `str`/list), scalar or `(batch_size,)`,
            UTF-8; invalid bytes are read as U+FFFD (which BERT drops).

    Returns:
        int32 token ids without special tokens: a 1-D tensor for a scalar
        input, a `tf.RaggedTensor` `(batch_size, None)` for a batch.

    Example:
        >>> tok = WordPieceTokenizer("tests/fixtures/wordpiece/vocab.txt")
        >>> tok("ALBERT模型！").numpy().tolist()
        [9266, 10491, 3563, 1798, 8013]
    """

    def __init__(self, vocabulary, lowercase=None, **kwargs):
        super().__init__(**kwargs)
        self.vocab = WordPieceVocab(vocabulary)
        self.lowercase = self.vocab.resolve_lowercase(lowercase)
        self._tables = wordpiece_graph.WordPieceTables.build(self.vocab.tokens, self.lowercase)
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=list(self.vocab.tokens), suffix_indicator=CONTINUATION,
            max_bytes_per_word=_MAX_WORD_BYTES, token_out_type=tf.int32,
            unknown_token=self.vocab.tokens[self.vocab.special_ids["unk"]],
            no_pretokenization=True, support_detokenization=False)

    # Vocabulary (host-side Python values).

    tokens = property(lambda self: self.vocab.tokens)
    vocabulary_type = "wordpiece"
    # BERT's BasicTokenizer makes every CJK ideograph and punctuation mark a word.
    standalone_words = True
    # A longer word is one unknown token (BERT's rule).
    max_word_chars = MAX_WORD_CHARS

    @property
    def max_token_chars(self):
        """The most characters one token spells (its "##" not counted), at least 1."""
        return max(1, max(len(t.removeprefix(CONTINUATION)) for t in self.vocab.tokens))

    def id_to_piece(self, index):
        return self.vocab.tokens[self.checked_id(index)]

    def piece_to_id(self, piece):
        """The token's id; `unk_id` for a string that is not a token."""
        return self.vocab.ids.get(piece, self.unk_id)

    # Tokenization.

    def _pieces(self, words):
        """Ids of each word: ragged `(num_words, None)`."""
        too_long = words.length > MAX_WORD_CHARS
        pieces = self._wordpiece.tokenize(tf.where(too_long, "", words.text))
        unknown = tf.RaggedTensor.from_row_lengths(
            tf.fill([tf.reduce_sum(tf.cast(too_long, tf.int32))], self.unk_id),
            tf.cast(too_long, tf.int64))
        return tf.concat([pieces, unknown], axis=1)

    def _by_row(self, words, pieces, values):
        """`values` (one per token, flat) as ragged `(batch_size, None)`."""
        rows = tf.gather(words.row, tf.cast(pieces.value_rowids(), tf.int32))
        return tf.RaggedTensor.from_value_rowids(values, tf.cast(rows, tf.int64),
                                                 nrows=tf.cast(words.num_rows, tf.int64))

    def call(self, inputs):
        scalar, strings = self._as_batch(inputs)
        words = wordpiece_graph.split_words(strings, self._tables, self.lowercase)
        pieces = self._pieces(words)
        ids = self._by_row(words, pieces, pieces.flat_values)
        return ids[0] if scalar else ids

    def tokenize_with_offsets(self, inputs):
        """Ids and the characters each came from.

        Returns:
            `(ids, starts, ends)`, int32, shaped as `call`'s output; `starts`
            and `ends` are Unicode code point offsets into each ORIGINAL
            input string, so that `text[start:end]` is the text the token came
            from (see the package docstring).
        """
        scalar, strings = self._as_batch(inputs)
        words = wordpiece_graph.split_words(strings, self._tables, self.lowercase)
        pieces = self._pieces(words)
        starts, ends = wordpiece_graph.piece_offsets(words, pieces, self.unk_id, self._tables)
        result = tuple(self._by_row(words, pieces, v) for v in (pieces.flat_values, starts, ends))
        return tuple(r[0] for r in result) if scalar else result

    # Config: the tokens travel inside the config.

    def get_config(self):
        config = super().get_config()
        config.update({"vocabulary": list(self.vocab.tokens), "lowercase": self.lowercase})
        return config
