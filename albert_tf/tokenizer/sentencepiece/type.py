"""SentencePiece vocabularies (ALBERT's English models): `HostTokenizer` and `AlbertTokenizer`."""

import os
import pathlib
import string

from albert_tf.tokenizer.base import VocabularyType, register
from albert_tf.tokenizer.sentencepiece.vocab import SpmVocab

UNDERLINE = "\u2581"
# The reference's punctuation pieces and the characters a continuation piece consists of.
PUNCTUATION = frozenset(string.punctuation) - frozenset("'<=>")
_WORD_CHARACTERS = frozenset(string.ascii_lowercase) | PUNCTUATION


class SentencePieceType(VocabularyType):
    name = "sentencepiece"
    file_name = "spiece.model"
    # Hugging Face ships spiece.model, Google's tarballs 30k-clean.model,
    # keras-hub presets assets/tokenizer/vocabulary.spm.
    folder_files = ("spiece.model", "30k-clean.model",
                    os.path.join("assets", "tokenizer", "vocabulary.spm"))
    description = "a SentencePiece model (.model)"
    host_form = "albert_tf.tokenizer.sentencepiece.host:HostTokenizer"
    graph_form = "albert_tf.tokenizer.sentencepiece.layer:AlbertTokenizer"
    web_tokenizer = pathlib.Path(__file__).with_name("web_tokenizer.js")
    web_tables_form = "albert_tf.tokenizer.sentencepiece.web:tables"

    def continues_word(self, piece):
        """google-research/albert's `is_start_piece`, negated: a piece continues the
        word before it when it has no leading "▁", does not start with "<", is not
        a single punctuation character and consists of ASCII letters and
        punctuation only ("liev" in "▁unbe" "liev" "able", "!!" after "▁what"; the
        reference's punctuation is ASCII's without "'", "<", "=" and ">")."""
        return (not piece.startswith((UNDERLINE, "<")) and piece not in PUNCTUATION
                and all(c.lower() in _WORD_CHARACTERS for c in piece))

    def device_vocabulary(self, tokenizer):
        """A SentencePiece model whose normalizer does ALBERT's preprocessing
        (`device.device_model`), for the runtimes' stock SentencePiece tokenizer."""
        from albert_tf.tokenizer.sentencepiece import device

        return "sentencepiece", self.file_name, device.device_model(tokenizer)

    def recognizes(self, path):
        try:
            SpmVocab(path)
        except ValueError:
            return False
        return True

    def find_in_folder(self, folder):
        found = super().find_in_folder(folder)
        if found:
            return found
        models = sorted(n for n in os.listdir(folder) if n.endswith(".model"))
        return os.path.join(folder, models[0]) if len(models) == 1 else None

    def train(self, input_files, vocab_size, output, lowercase=False, verbose=False):
        """Writes `output`.model and .vocab (`training.ALBERT_TRAINER_OPTIONS`)."""
        from albert_tf.tokenizer.sentencepiece.training import train_sentencepiece
        from albert_tf.tokenizer.trainers import trained_line

        path = train_sentencepiece(input_files, vocab_size, output, lowercase=lowercase,
                                   verbose=verbose)
        vocab = SpmVocab(path)
        return trained_line(path, vocab, "pieces", vocab.casing().uncased)


register(SentencePieceType())
