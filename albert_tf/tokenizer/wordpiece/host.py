"""`HostWordPieceTokenizer`: BERT's `FullTokenizer` (WordPiece) in plain Python.

google-research/bert (and albert) `tokenization.py`, `FullTokenizer(vocab_file,
do_lower_case)`: `BasicTokenizer` (see `chars`), then
`WordpieceTokenizer`: per word, greedy longest match first against the
vocabulary, pieces after the first prefixed with "##"; a word of more than
`MAX_WORD_CHARS` (200) characters, or one the vocabulary cannot cover, is one
[UNK]. Same ids and offsets as the in-graph `WordPieceTokenizer` (tested);
offsets follow the rules in `albert_tf.tokenizer`'s package docstring.
"""

import bisect
import functools

from albert_tf.tokenizer.host_base import HostBase
from albert_tf.tokenizer.normalization import final_sigma, next_true, to_text
from albert_tf.tokenizer.wordpiece import chars
from albert_tf.tokenizer.wordpiece.vocab import (CONTINUATION, MAX_WORD_CHARS, WordPieceIds,
                                                 is_control)

# Words whose pieces a tokenizer remembers (most text repeats a few thousand).
_CACHE_SIZE = 1 << 16


def basic_tokenize(text, lowercase):
    """google-research/bert `BasicTokenizer(do_lower_case=lowercase).tokenize`:
    the words of `text` (`str` or UTF-8 `bytes`), as a list of `str`.

    Faster than the reference's steps, same words (tested): whitespace is not
    turned into " " nor put around CJK characters, since the word pattern
    splits at every break character and matches each CJK character alone, and
    to `str.lower` all of them end a Final_Sigma context as " " does; so
    `lower` on the whole text is `lower` on each word.
    """
    text = chars.drop_pattern().sub("", to_text(text))
    if lowercase:
        text = text.lower()
        if not text.isascii():
            text = text.translate(chars.strip_accents_table())
    return chars.word_pattern().findall(text)


class HostWordPieceTokenizer(WordPieceIds, HostBase):
    """BERT's WordPiece tokenization on the host, of `vocabulary` with the casing
    `lowercase` (see `WordPieceIds`): `basic_tokenize`, then each word's pieces
    by greedy longest match (cached per word).

    Example:
        >>> tok = HostWordPieceTokenizer("tests/fixtures/wordpiece/vocab.txt")
        >>> tok.tokenize("ALBERT模型！")
        ['al', '##bert', '模', '型', '！']
        >>> tok.encode("ALBERT模型！")
        [9266, 10491, 3563, 1798, 8013]
    """

    def __init__(self, vocabulary, lowercase=None):
        self.load_vocabulary(vocabulary, lowercase)
        self._ids = self.vocab.ids
        self._cache = {}  # word -> pieces (a plain dict: the tokenizer stays picklable)

    # Vocabulary.

    def continues_word(self, index):
        """Whether token `index` continues the word before it ("##" pieces; BERT's
        `create_pretraining_data._is_start_piece_bert`, for whole-word masking)."""
        token = self.id_to_piece(index)
        return token.startswith(CONTINUATION) and len(token) > len(CONTINUATION)

    def control_ids(self):
        """Ids of the tokens written "[...]" or "<...>" ([PAD], [unusedN], [UNK],
        [CLS], [SEP], [MASK], <S>, ...): only [UNK] ever comes out of `encode`."""
        return [i for i, token in enumerate(self.vocab.tokens) if is_control(token)]

    # Tokenization.

    def basic_tokenize(self, text):
        """`BasicTokenizer.tokenize`: the words of `text` (`str` or UTF-8 `bytes`)."""
        return basic_tokenize(text, self.lowercase)

    def _pieces(self, word):
        """`((id, characters), ...)`: the pieces of one word (cached)."""
        pieces = self._cache.get(word)
        if pieces is None:
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()
            pieces = self._cache[word] = self._wordpiece(word)
        return pieces

    def _wordpiece(self, word):
        """WordpieceTokenizer on one word: greedy longest match first."""
        if len(word) > MAX_WORD_CHARS:
            return ((self.unk_id, len(word)),)
        pieces, start = [], 0
        while start < len(word):
            # A candidate longer than the longest token cannot match.
            end = min(len(word), start + self.vocab.max_token_chars)
            while end > start:
                piece = word[start:end] if start == 0 else CONTINUATION + word[start:end]
                index = self._ids.get(piece)
                if index is not None:
                    break
                end -= 1
            else:
                return ((self.unk_id, len(word)),)
            pieces.append((index, end - start))
            start = end
        return tuple(pieces)

    def tokenize(self, text):
        """`FullTokenizer.tokenize`: the tokens (strings) of `text`."""
        return [self.vocab.tokens[i] for i in self.encode(text)]

    def encode(self, text):
        """Ids of one text (`str` or UTF-8 `bytes`), no special tokens: `list[int]`."""
        return [index for word in self.basic_tokenize(text)
                for index, _ in self._pieces(word)]

    def _offsets(self, text):
        """`encode_with_offsets` of a `str`: each word's pieces, spans from its characters."""
        alignment = _Alignment(text, self.lowercase)
        ids, starts, ends = [], [], []
        for word, owners in alignment.words():
            position = 0
            for index, length in self._pieces(word):
                ids.append(index)
                starts.append(owners[position])
                ends.append(alignment.end_after(owners[position + length - 1]))
                position += length
        return ids, starts, ends


class _Alignment:
    """The words of `text` with the input character each of their characters came from."""

    def __init__(self, text, lowercase):
        starts, values = chars.property_ranges()
        props = [values[bisect.bisect_right(starts, ord(c)) - 1] for c in text]
        self.kinds = [p & chars.KIND_MASK for p in props]
        self.cases = [p >> chars.CASE_SHIFT for p in props]
        self.emissions = [self._emission(text, i, lowercase) for i in range(len(text))]
        # A character that emits nothing (a dropped control character, an
        # accent) belongs with the character before it; word breaks never do.
        self.next_anchor = next_true([bool(e) or k == chars.BREAK
                                      for e, k in zip(self.emissions, self.kinds)], strict=True)

    def _emission(self, text, i, lowercase):
        char, kind = text[i], self.kinds[i]
        if kind in (chars.BREAK, chars.DROP):
            return ""
        if not lowercase:
            return char
        if ord(char) == chars.CAPITAL_SIGMA:
            return chr(chars.FINAL_SIGMA if self._final_sigma(i) else chars.SMALL_SIGMA)
        return chars.emission_table().get(char, char)

    def _final_sigma(self, i):
        """Python's `str.lower` Final_Sigma context of character `i` (the scans stop at
        the ends of its word: breaks and CJK characters are OTHER in the tables)."""
        case = self.cases.__getitem__
        return final_sigma(i, len(self.cases), case, case)

    def end_after(self, i):
        """End of the span of a token whose last character came from character `i`."""
        return self.next_anchor[i]

    def words(self):
        """`(word, owners)` pairs: each word's text and, per character, its input index."""
        word, owners = [], []
        for i, (emission, kind) in enumerate(zip(self.emissions, self.kinds)):
            if kind == chars.BREAK or kind == chars.CJK:
                if word:
                    yield "".join(word), owners
                    word, owners = [], []
                if kind == chars.CJK:
                    yield emission, [i] * len(emission)
                continue
            for char in emission:
                if _is_punct(char):
                    if word:
                        yield "".join(word), owners
                        word, owners = [], []
                    yield char, [i]
                else:
                    word.append(char)
                    owners.append(i)
        if word:
            yield "".join(word), owners


@functools.lru_cache(maxsize=4096)
def _is_punct(char):
    return chars.is_punctuation(char)
