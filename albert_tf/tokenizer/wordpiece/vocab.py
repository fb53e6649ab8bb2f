"""A BERT WordPiece vocabulary (`vocab.txt`): token ids, special ids, casing.

Read as google-research/bert (and albert) `tokenization.load_vocab` reads it:
UTF-8, one token a line (lines end at "\\n"), the token being the line's first
whitespace-separated field, or " " for a blank line; a token seen again keeps
its first id, and ids count the distinct tokens before it (so a repeated line
shifts the ids of the lines after it, as in the reference; Hugging Face's
`BertTokenizer` instead gives every line its line number, the last repeat
winning).
"""

import os

from albert_tf.tokenizer.base import VocabularyIds, fingerprint

SPECIAL_TOKENS = {"pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]",
                  "mask": "[MASK]"}
# Lines a file needs to be taken for a WordPiece vocabulary.
SIGNATURE_TOKENS = ("[CLS]", "[SEP]", "[UNK]")
CONTINUATION = "##"  # prefix of a piece that continues a word
# `WordpieceTokenizer.max_input_chars_per_word` of google-research/bert: a
# longer word becomes [UNK]. (Hugging Face's BertTokenizer uses 100.)
MAX_WORD_CHARS = 200
# A vocabulary is uncased when at most this fraction of its tokens contains a
# character that `str.lower` changes (as for SentencePiece vocabularies).
UNCASED_MAX_FRACTION = 0.001


def parse_tokens(text):
    """The tokens of a vocabulary file's text, in id order (`load_vocab`)."""
    lines = text.split("\n")
    if lines[-1] == "":  # the last line ends with "\n"
        lines.pop()
    seen, tokens = set(), []
    for line in lines:
        token = line.split()[0] if line.strip() else " "
        if token not in seen:
            seen.add(token)
            tokens.append(token)
    return tokens


def read_tokens(path):
    """`parse_tokens` of the file `path`.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file is not UTF-8 text (it names the file).
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"WordPiece vocabulary file not found: {path}")
    with open(path, "rb") as f:
        data = f.read()
    if b"\0" in data:
        raise ValueError(f"{path}: not a WordPiece vocabulary (a binary file)")
    try:
        return parse_tokens(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not a WordPiece vocabulary (not UTF-8 text: {e.reason} "
                         f"at byte {e.start})") from None


def looks_like_vocabulary(path):
    """Whether `path` is a UTF-8 text file with [CLS], [SEP] and [UNK] lines."""
    try:
        tokens = read_tokens(path)
    except (OSError, ValueError):
        return False
    return set(SIGNATURE_TOKENS) <= set(tokens)


def is_control(token):
    """Tokens written "[...]" or "<...>" ([PAD], [unused1], <S>): never the
    text of a word, since "[", "<" are punctuation, words of their own."""
    return len(token) > 2 and ((token[0], token[-1]) in (("[", "]"), ("<", ">")))


class WordPieceVocab:
    """The tokens of a WordPiece vocabulary and what follows from them.

    Args:
        vocabulary: path to a `vocab.txt`, or the tokens in id order (a list
            of distinct non-empty strings).

    Raises:
        ValueError: one of `SPECIAL_TOKENS` is missing, or a token list
            repeats a token or holds something else.
    """

    def __init__(self, vocabulary):
        if isinstance(vocabulary, (str, os.PathLike)):
            self.source = os.fspath(vocabulary)
            self.tokens = tuple(read_tokens(self.source))
        else:
            self.source = "<WordPiece token list>"
            self.tokens = tuple(vocabulary)
            bad = [t for t in self.tokens if not isinstance(t, str) or not t]
            if bad:
                raise ValueError(f"{self.source}: tokens must be non-empty strings, got "
                                 f"{bad[0]!r}")
        self.ids = {token: index for index, token in enumerate(self.tokens)}
        if len(self.ids) != len(self.tokens):
            raise ValueError(f"{self.source}: a token list repeats a token")
        missing = [t for t in SPECIAL_TOKENS.values() if t not in self.ids]
        if missing:
            raise ValueError(f"{self.source}: the vocabulary has no {', '.join(missing)} "
                             f"(BERT needs {', '.join(SPECIAL_TOKENS.values())})")
        self.special_ids = {name: self.ids[t] for name, t in SPECIAL_TOKENS.items()}
        self.size = len(self.tokens)
        self.max_token_chars = max(len(t) for t in self.tokens)

    def piece(self, index):
        return self.tokens[index]

    def id_of(self, piece):
        return self.ids.get(piece, self.special_ids["unk"])

    def longest_spelling(self):
        """The most characters one token spells (its "##" not counted), at least 1."""
        return max(1, max(len(t.removeprefix(CONTINUATION)) for t in self.tokens))

    def fingerprint(self, lowercase):
        """A short hash of the tokens and the casing."""
        return fingerprint("\n".join(self.tokens).encode("utf-8"), lowercase)

    def text(self):
        """The vocabulary as a file's text that `parse_tokens` reads back the same."""
        return "".join(("" if t == " " else t) + "\n" for t in self.tokens)

    def file_bytes(self):
        """The `vocab.txt` file: `text()` in UTF-8."""
        return self.text().encode("utf-8")

    def resolve_lowercase(self, lowercase):
        """The lowercase flag to use: detected when None, checked when given.

        Detected: uncased when at most `UNCASED_MAX_FRACTION` of the tokens
        (control tokens aside) hold a character that `str.lower` changes.
        Checked: lowercase=True contradicts a vocabulary above that fraction
        (its capitalized tokens would never be used), lowercase=False one
        without any such token but with letters (every capital would become
        [UNK]); google-research/bert's `validate_case_matches_checkpoint`
        also rejects such pairs. Raises `ValueError` on a contradiction.
        """
        normal = [t for t in self.tokens if not is_control(t)]
        cased = [t for t in normal if t.lower() != t]
        uncased = len(cased) <= UNCASED_MAX_FRACTION * len(normal)
        if lowercase is None:
            return uncased
        has_letters = any(t.upper() != t for t in normal)
        if lowercase and not uncased:
            problem = (f"cased: {len(cased)} of {len(normal)} tokens contain a character that "
                       f"lowercasing changes (e.g. {cased[:3]})")
        elif not lowercase and not cased and has_letters:
            problem = "uncased: no token contains a character that lowercasing changes"
        else:
            return bool(lowercase)
        raise ValueError(f"lowercase={lowercase!r} contradicts the vocabulary of {self.source}, "
                         f"which is {problem}. Pass lowercase={not lowercase} or "
                         f"lowercase=None.")


class WordPieceIds(VocabularyIds):
    """The vocabulary side of both WordPiece tokenizers, `host.HostWordPieceTokenizer`
    and `layer.WordPieceTokenizer`, which take the same two arguments:

        vocabulary: path to a `vocab.txt`, or its tokens in id order.
        lowercase: lowercase and strip accents (uncased models, BERT's
            `do_lower_case`); None detects it from the vocabulary (no cased
            letters: uncased); a value that contradicts the vocabulary raises
            `ValueError`.
    """

    vocabulary_type = "wordpiece"
    vocabulary_class = WordPieceVocab
    tokens = property(lambda self: self.vocab.tokens)  # in id order
