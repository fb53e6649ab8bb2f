"""WordPiece vocabularies (BERT's, and Chinese ALBERT's): `HostWordPieceTokenizer`
and `WordPieceTokenizer`."""

import pathlib

from albert_tf.tokenizer.base import VocabularyType, register
from albert_tf.tokenizer.wordpiece.vocab import WordPieceVocab, looks_like_vocabulary


class WordPieceType(VocabularyType):
    name = "wordpiece"
    file_name = "vocab.txt"
    # Hugging Face and brightmart/albert_zh ship vocab.txt, Google's
    # albert_*_zh tarballs vocab_chinese.txt.
    folder_files = ("vocab.txt", "vocab_chinese.txt")
    description = "a WordPiece vocabulary (vocab.txt with [CLS], [SEP] and [UNK] lines)"
    host_form = "albert_tf.tokenizer.wordpiece.host:HostWordPieceTokenizer"
    graph_form = "albert_tf.tokenizer.wordpiece.layer:WordPieceTokenizer"
    web_tokenizer = pathlib.Path(__file__).with_name("web_tokenizer.js")
    web_tables_form = "albert_tf.tokenizer.wordpiece.web:tables"

    def continues_word(self, piece):
        """"##able" in "un" "##believ" "##able"."""
        return piece.startswith("##")

    def word_marks(self, tokenizer, segment):
        """A Chinese vocabulary's whole words: brightmart/albert_zh's marks of the
        segmenter's words (`whole_words`); None for a vocabulary of another language."""
        from albert_tf.tokenizer.wordpiece import whole_words

        if not whole_words.is_chinese(tokenizer.vocab.tokens):
            return None

        def marks(ids):
            pieces = [tokenizer.id_to_piece(i) for i in ids]
            return whole_words.word_marks(pieces, segment("".join(pieces)))
        return marks

    def device_vocabulary(self, tokenizer):
        """vocab.txt for the runtimes' `BertTokenizer` (which lowercases, as Chinese
        ALBERT's tokenizer does); an empty line, which that reader cannot take, is
        written as `[BLANK<id>]`, a token no text produces."""
        lines = [token if token.strip() else f"[BLANK{i}]"
                 for i, token in enumerate(tokenizer.vocab.tokens)]
        return "bert", self.file_name, ("\n".join(lines) + "\n").encode("utf-8")

    def recognizes(self, path):
        # UTF-8 text without NUL bytes: a SentencePiece model is never taken for one.
        return looks_like_vocabulary(path)

    def train(self, input_files, vocab_size, output, lowercase=False, verbose=False):
        """Writes the folder `output`: vocab.txt and tokenizer_config.json."""
        from albert_tf.tokenizer.trainers import trained_line
        from albert_tf.tokenizer.wordpiece.training import train_wordpiece

        path = train_wordpiece(input_files, vocab_size, output, lowercase=lowercase,
                               verbose=verbose)
        vocab = WordPieceVocab(path)
        return trained_line(path, vocab, "tokens", vocab.resolve_lowercase(lowercase))


register(WordPieceType())
