"""WordPiece vocabularies (BERT's, and Chinese ALBERT's): `HostWordPieceTokenizer`
and `WordPieceTokenizer`."""

import os

from albert_tf.tokenizer.base import VocabularyType, register
from albert_tf.tokenizer.wordpiece.vocab import WordPieceVocab, looks_like_vocabulary


class WordPieceType(VocabularyType):
    name = "wordpiece"
    file_name = "vocab.txt"
    # Hugging Face and brightmart/albert_zh ship vocab.txt, Google's
    # albert_*_zh tarballs vocab_chinese.txt.
    folder_files = ("vocab.txt", "vocab_chinese.txt")
    description = "a WordPiece vocabulary (vocab.txt with [CLS], [SEP] and [UNK] lines)"

    def recognizes(self, path):
        # UTF-8 text without NUL bytes: a SentencePiece model is never taken for one.
        return looks_like_vocabulary(path)

    def host(self, path, lowercase=None):
        from albert_tf.tokenizer.wordpiece.host import HostWordPieceTokenizer

        return HostWordPieceTokenizer(path, lowercase)

    def graph(self, path, lowercase=None):
        from albert_tf.tokenizer.wordpiece.layer import WordPieceTokenizer

        return WordPieceTokenizer(path, lowercase)

    def train(self, input_files, vocab_size, output, lowercase=False, verbose=False):
        """Writes the folder `output`: vocab.txt and tokenizer_config.json."""
        from albert_tf.tokenizer.wordpiece.host import HostWordPieceTokenizer
        from albert_tf.tokenizer.wordpiece.training import train_wordpiece

        path = train_wordpiece(input_files, vocab_size, output, lowercase=lowercase,
                               verbose=verbose)
        tok = HostWordPieceTokenizer(path, lowercase=lowercase)
        return (f"wrote {path} ({tok.vocabulary_size} tokens, special ids "
                f"{tok.vocab.special_ids}, {'uncased' if tok.lowercase else 'cased'})")

    def save(self, tokenizer, directory):
        # From the tokens: a tokenizer may have been built from a token list.
        with open(os.path.join(directory, self.file_name), "w", encoding="utf-8",
                  newline="\n") as f:
            f.write(WordPieceVocab(tokenizer.tokens).text())
        return {"type": self.name, "file": self.file_name, "lowercase": bool(tokenizer.lowercase)}


register(WordPieceType())
