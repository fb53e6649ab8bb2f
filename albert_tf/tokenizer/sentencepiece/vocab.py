"""A SentencePiece model as ALBERT uses it: special ids, casing, digit-comma rule.

Everything here runs on the host, once, when a tokenizer is built; the
in-graph tokenizer receives its results as constant tables.
"""

import dataclasses
import functools
import math
import os

import numpy as np
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

from albert_tf.tokenizer.base import VocabularyIds, fingerprint

UNDERLINE = "\u2581"  # SentencePiece's word-boundary mark "▁"
SPECIAL_PIECES = {"pad": "<pad>", "unk": "<unk>", "cls": "[CLS]", "sep": "[SEP]",
                  "mask": "[MASK]"}
# A vocabulary is uncased when at most this fraction of its pieces contains a
# character that `str.lower` would change (lowercased training text cannot
# produce such a piece; the tolerance admits a few stray ones).
UNCASED_MAX_FRACTION = 0.001

# Replacement of one piece: (id, offset, width) per new piece, where offset and
# width are UTF-8 bytes of the original piece's text after its leading "▁"s;
# WHOLE means "the original piece's own span", COMMA "its last byte".
WHOLE, COMMA = -1, -2

# What the reference `sentencepiece` (0.2.x) Viterbi adds for a piece it had
# no single-character piece for, below the lowest piece score (`kUnkPenalty`).
UNK_PENALTY = 10.0
_MISSING = object()


def load_proto(proto):
    """`(bytes, source)` from a path or the serialized model; `source` names it in errors."""
    if isinstance(proto, (bytes, bytearray)):
        return bytes(proto), "<SentencePiece model bytes>"
    if isinstance(proto, (str, os.PathLike)):
        path = os.fspath(proto)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"SentencePiece model file not found: {path}")
        with open(path, "rb") as f:
            return f.read(), path
    raise TypeError(f"proto must be a path or bytes, got {type(proto).__name__}")


@dataclasses.dataclass(frozen=True)
class ViterbiPieces:
    """How the reference unigram Viterbi scores each id (`graph_ties` uses it).

    Measured against the `sentencepiece` Python package (0.2.x), which sums
    path scores in float32: a normal piece adds its score; a user-defined
    piece of n UTF-8 bytes adds float32(0.1 * (n - 1)); each character with no
    piece of its own adds `unk_score` (consecutive ones come out as one
    <unk>). Arrays are indexed by id, `(vocab_size,)`.
    """

    texts: tuple          # str: what the piece matches; "" if Viterbi never matches it
    scores: np.ndarray    # float32: what the piece adds to a path score
    margins: np.ndarray   # float32: score minus that of the piece's best split into
    #                       several pieces (+inf for one character or "")
    unk_id: int
    unk_score: np.float32


@functools.lru_cache(maxsize=4)
def _viterbi_pieces(proto):
    model = sentencepiece_model_pb2.ModelProto.FromString(proto)
    kind = sentencepiece_model_pb2.ModelProto.SentencePiece
    texts, scores = [], np.zeros(len(model.pieces), np.float32)
    for index, piece in enumerate(model.pieces):
        matched = piece.type in (kind.NORMAL, kind.USER_DEFINED)
        texts.append(piece.piece if matched else "")
        if piece.type == kind.USER_DEFINED:
            scores[index] = 0.1 * (len(piece.piece.encode("utf-8")) - 1)
        elif matched:
            scores[index] = piece.score
    normal = [p.score for p in model.pieces if p.type == kind.NORMAL]
    unk_id = next(i for i, p in enumerate(model.pieces) if p.type == kind.UNKNOWN)
    unk_score = np.float32(np.float32(min(normal)) - np.float32(UNK_PENALTY))
    # Every prefix of a piece, with the piece's score where it is one (else None).
    prefixes = {t[:k]: None for t in texts for k in range(1, len(t))}
    prefixes.update((t, float(s)) for t, s in zip(texts, scores) if t)
    margins = np.array([_split_margin(t, prefixes) for t in texts], np.float32)
    return ViterbiPieces(tuple(texts), scores, margins, unk_id, unk_score)


def _split_margin(text, prefixes):
    """`text`'s score minus its best segmentation into two or more pieces (exact DP)."""
    if len(text) < 2:
        return math.inf
    best = [-math.inf] * (len(text) + 1)
    best[0] = 0.0
    for start in range(len(text)):
        here = best[start]
        if here == -math.inf:
            continue
        for end in range(start + 1, len(text) + 1 - (start == 0)):
            score = prefixes.get(text[start:end], _MISSING)
            if score is _MISSING:
                break
            if score is not None and here + score > best[end]:
                best[end] = here + score
    return prefixes[text] - best[-1]


@dataclasses.dataclass(frozen=True)
class CasingReport:
    """Counts of normal pieces with capitals (`cased_pieces`) or small letters."""

    cased_pieces: int
    lowercase_pieces: int
    total_pieces: int
    examples: tuple  # a few pieces with capitals, for error messages

    @property
    def caseless(self):
        return self.cased_pieces == 0 and self.lowercase_pieces == 0

    @property
    def uncased(self):
        return self.cased_pieces <= UNCASED_MAX_FRACTION * self.total_pieces


class SpmVocab:
    """The host view of one SentencePiece model.

    Args:
        proto: path to a `.model` file, or its bytes.

    Raises:
        ValueError: the bytes are not a SentencePiece model, or one of
            `<pad>`, `<unk>`, `[CLS]`, `[SEP]`, `[MASK]` is missing.
    """

    def __init__(self, proto):
        self.proto, self.source = load_proto(proto)
        self.sp = spm.SentencePieceProcessor()
        try:
            self.sp.LoadFromSerializedProto(self.proto)
        except (RuntimeError, OSError) as e:
            raise ValueError(f"{self.source}: not a SentencePiece model ({e})") from None
        self.size = self.sp.get_piece_size()
        self.special_ids = {}
        for name, piece in SPECIAL_PIECES.items():
            index = self.sp.piece_to_id(piece)
            if self.sp.id_to_piece(index) != piece:
                raise ValueError(f"{self.source}: the vocabulary has no piece {piece!r} "
                                 f"(ALBERT needs {sorted(SPECIAL_PIECES.values())})")
            self.special_ids[name] = index

    def piece(self, index):
        return self.sp.id_to_piece(index)

    def id_of(self, piece):
        return self.sp.piece_to_id(piece)

    def longest_spelling(self):
        """The most characters one piece spells (its "▁" not counted), at least 1."""
        return max(1, max(len(self.sp.id_to_piece(i).replace(UNDERLINE, ""))
                          for i in range(self.size)))

    def file_bytes(self):
        """The `.model` file: the serialized model."""
        return self.proto

    def fingerprint(self, lowercase):
        """A short hash of the model and the casing."""
        return fingerprint(self.proto, lowercase)

    def _is_normal(self, index):
        sp = self.sp
        return not (sp.is_control(index) or sp.is_unknown(index) or sp.is_unused(index))

    def casing(self):
        """How many normal pieces hold a character that lowercasing changes."""
        cased, lowercase, examples = 0, 0, []
        for index in range(self.size):
            if not self._is_normal(index):
                continue
            piece = self.sp.id_to_piece(index)
            if any(c.lower() != c for c in piece):
                cased += 1
                if len(examples) < 5:
                    examples.append(piece)
            lowercase += any(c.upper() != c for c in piece)
        return CasingReport(cased, lowercase, self.size, tuple(examples))

    def viterbi_pieces(self):
        """`ViterbiPieces` of this model (computed once per model, ~0.5 s)."""
        return _viterbi_pieces(self.proto)

    def resolve_lowercase(self, lowercase):
        """The lowercase flag to use: detected when None, checked when given.

        Raises:
            ValueError: `lowercase` contradicts the vocabulary (an uncased
                vocabulary with lowercase=False would map every capital letter
                to <unk>; a cased one with lowercase=True would never use its
                capitalized pieces).
        """
        report = self.casing()
        if report.caseless:  # no cased letters at all: either choice is harmless
            return bool(lowercase)
        if lowercase is None:
            return report.uncased
        if bool(lowercase) != report.uncased:
            kind = "uncased" if report.uncased else "cased"
            raise ValueError(
                f"lowercase={lowercase!r} contradicts the vocabulary of {self.source}, which is "
                f"{kind}: {report.cased_pieces} of {report.total_pieces} pieces contain a "
                f"character that lowercasing changes (e.g. {list(report.examples)[:3]}). "
                f"Pass lowercase={report.uncased} or lowercase=None.")
        return bool(lowercase)

    def digit_comma_replacements(self):
        """`{id: [(new_id, offset, width), ...]}` for ALBERT's digit-comma rule.

        google-research/albert `encode_pieces`: a piece longer than one
        character that ends in "," after a digit (`str.isdigit`) is replaced by
        the pieces of its text without the comma and without "▁"; when the
        original piece did not start with "▁" but the first new piece does,
        that "▁" is stripped (the piece dropped if it was only "▁"); then ","
        follows as its own piece. The rule depends only on the piece, so it is
        computed once per vocabulary entry here. (Under Python 3 the
        reference compares `str` with `bytes` here, so its strip branch never
        fires; no ALBERT vocabulary we know has such a piece without "▁", and
        we follow the rule as written.)
        """
        out = {}
        for index in range(self.size):
            piece = self.sp.id_to_piece(index)
            if not (self._is_normal(index) and len(piece) > 1 and piece[-1] == ","
                    and piece[-2].isdigit()):
                continue
            pieces = self.sp.encode(piece[:-1].replace(UNDERLINE, ""), out_type=str)
            if not piece.startswith(UNDERLINE) and pieces and pieces[0].startswith(UNDERLINE):
                pieces = pieces[1:] if pieces[0] == UNDERLINE else [pieces[0][1:]] + pieces[1:]
            rule, offset = [], 0
            for new in pieces:
                width = len(new.replace(UNDERLINE, "").encode("utf-8"))
                rule.append((self.sp.piece_to_id(new), offset, width))
                offset += width
            rule.append((self.sp.piece_to_id(","), COMMA, 0))
            out[index] = rule
        return out


class SentencePieceIds(VocabularyIds):
    """The vocabulary side of both SentencePiece tokenizers, `host.HostTokenizer`
    and `layer.AlbertTokenizer`, which take the same two arguments:

        proto: path to a SentencePiece `.model` file, or its bytes.
        lowercase: lowercase the text (uncased models); None detects it from
            the vocabulary; a value that contradicts the vocabulary raises
            `ValueError`.
    """

    vocabulary_type = "sentencepiece"
    vocabulary_class = SpmVocab
    proto = property(lambda self: self.vocab.proto)  # the serialized model
