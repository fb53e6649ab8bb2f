"""`HostTokenizer`: ALBERT tokenization in plain Python, for featurization.

Same ids and offsets as the in-graph `AlbertTokenizer` (tested), without
TensorFlow: `preprocess_text` (its faster equivalent), then the `sentencepiece` package, then the
digit-comma rule. The offsets follow the rules in `albert_tf.tokenizer`'s
package docstring.
"""

import bisect
import itertools

from albert_tf.tokenizer.host_base import HostBase
from albert_tf.tokenizer.normalization import (aligned_emissions, next_true,
                                               preprocess_text_fast, to_text,
                                               whitespace_code_points)
from albert_tf.tokenizer.sentencepiece.vocab import COMMA, SentencePieceIds


class HostTokenizer(SentencePieceIds, HostBase):
    """ALBERT's SentencePiece tokenization on the host, of the model `proto` with
    the casing `lowercase` (see `SentencePieceIds`): `preprocess`, then the
    `sentencepiece` package, then the digit-comma rule on the ids.

    Example:
        >>> tok = HostTokenizer("tests/fixtures/spm/albert_30k_clean.model")
        >>> tok.encode("This is a test")
        [48, 25, 21, 1289]
    """

    def __init__(self, proto, lowercase=None):
        self.load_vocabulary(proto, lowercase)
        self._sp = self.vocab.sp
        self._rules = self.vocab.digit_comma_replacements()
        self._rule_ids = {index: [r[0] for r in rule] for index, rule in self._rules.items()}
        self._rule_keys = frozenset(self._rules)

    # Tokenization.

    def preprocess(self, text):
        """`preprocess_text` with this model's casing; `str` or UTF-8 `bytes` in."""
        return preprocess_text_fast(to_text(text), self.lowercase)

    def _apply_rule(self, ids):
        if self._rule_keys.isdisjoint(ids):
            return ids
        out = []
        for index in ids:
            out.extend(self._rule_ids.get(index, (index,)))
        return out

    def encode(self, text):
        """Ids of one text (`str` or UTF-8 `bytes`), no special tokens: `list[int]`."""
        return self._apply_rule(self._sp.encode(self.preprocess(text)))

    def encode_batch(self, texts, num_threads=-1):
        """`encode` over a list, with SentencePiece's own thread pool."""
        batch = self._sp.encode([self.preprocess(t) for t in texts], num_threads=num_threads)
        return [self._apply_rule(ids) for ids in batch]

    def _offsets(self, text):
        """`encode_with_offsets` of a `str`: SentencePiece on the aligned emissions."""
        emissions = aligned_emissions(text, self.lowercase)
        alignment = _Alignment(text, emissions)
        pieces = self._sp.encode("".join(emissions), out_type="proto").pieces
        ids, starts, ends = [], [], []
        for piece in pieces:
            begin = alignment.trim(piece.begin, piece.end)
            for index, b, e in self._expand(piece.id, begin, piece.end):
                start, end = alignment.char_span(b, e)
                ids.append(index)
                starts.append(start)
                ends.append(end)
        return ids, starts, ends

    def _expand(self, index, begin, end):
        """The digit-comma rule on one piece with byte range [begin, end)."""
        rule = self._rules.get(index)
        if rule is None:
            return [(index, begin, end)]
        out = []
        for new_index, offset, width in rule:
            if offset == COMMA:
                out.append((new_index, end - 1, end))
            else:
                out.append((new_index, min(begin + offset, end - 1),
                            min(begin + offset + width, end - 1)))
        return out


class _Alignment:
    """Maps byte ranges of the normalized text back to characters of `text`."""

    def __init__(self, text, emissions):
        spaces = frozenset(chr(cp) for cp in whitespace_code_points())
        widths = [len(e.encode("utf-8")) for e in emissions]
        self.num_chars = len(text)
        self.char_byte = list(itertools.accumulate([0] + widths[:-1])) if widths else []
        self.num_bytes = sum(widths)
        # A character that emits nothing (a combining mark, the second "`" of
        # "``") belongs with the character before it; whitespace never does.
        anchor = [w > 0 or c in spaces for w, c in zip(widths, text)]
        solid = [w > 0 and e != " " for w, e in zip(widths, emissions)]
        self.next_anchor = next_true(anchor, strict=True)
        self.next_solid = next_true(solid, strict=False)

    def owner(self, byte):
        """The character that emitted normalized byte `byte` (< num_bytes)."""
        return bisect.bisect_right(self.char_byte, byte) - 1

    def trim(self, begin, end):
        """`begin` moved past the whitespace that a leading "▁" stands for."""
        if begin >= end:
            return begin
        j = self.next_solid[self.owner(begin)]
        first_solid = self.char_byte[j] if j < self.num_chars else self.num_bytes
        return min(end, max(begin, first_solid))

    def char_span(self, begin, end):
        """Characters `[start, end)` of the byte range; empty ranges stay empty."""
        if begin >= end:
            start = self.owner(begin) if begin < self.num_bytes else self.num_chars
            return start, start
        return self.owner(begin), self.next_anchor[self.owner(end - 1)]

