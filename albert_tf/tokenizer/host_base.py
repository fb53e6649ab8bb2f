"""What every host tokenizer is: plain Python, for featurization and pretraining data."""

from albert_tf.tokenizer.base import VocabularyIds
from albert_tf.tokenizer.normalization import to_text


class HostBase(VocabularyIds):
    """The base of each vocabulary type's host tokenizer (`sentencepiece.host.HostTokenizer`,
    `wordpiece.host.HostWordPieceTokenizer`).

    A subclass gives `encode(text)` (`str` or UTF-8 `bytes` in, `list[int]` out)
    and `_offsets(text)` (`encode_with_offsets` on a `str`), and may give a
    faster `encode_batch`; its `vocab` also has `fingerprint(lowercase)`.
    """

    def fingerprint(self):
        """A short hash of the vocabulary and the casing (a cache key of featurized data)."""
        return self.vocab.fingerprint(self.lowercase)

    def encode_batch(self, texts):
        """`encode` over a list."""
        return [self.encode(text) for text in texts]

    def encode_with_offsets(self, text):
        """`(ids, starts, ends)`: ids and character spans into `text`.

        Returns:
            Three equal-length `list[int]`; `text[starts[i]:ends[i]]` is the
            text token `i` came from (for `bytes`, indices into the decoded
            `str`), by the rules of `albert_tf.tokenizer`'s package docstring.
        """
        return self._offsets(to_text(text))
