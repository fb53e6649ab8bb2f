"""SentencePiece vocabularies (ALBERT's English models): `HostTokenizer` and `AlbertTokenizer`."""

import os

from albert_tf.tokenizer.base import VocabularyType, register
from albert_tf.tokenizer.sentencepiece.vocab import SpmVocab


class SentencePieceType(VocabularyType):
    name = "sentencepiece"
    file_name = "spiece.model"
    # Hugging Face ships spiece.model, Google's tarballs 30k-clean.model,
    # keras-hub presets assets/tokenizer/vocabulary.spm.
    folder_files = ("spiece.model", "30k-clean.model",
                    os.path.join("assets", "tokenizer", "vocabulary.spm"))
    description = "a SentencePiece model (.model)"

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

    def host(self, path, lowercase=None):
        from albert_tf.tokenizer.sentencepiece.host import HostTokenizer

        return HostTokenizer(path, lowercase)

    def graph(self, path, lowercase=None):
        from albert_tf.tokenizer.sentencepiece.layer import AlbertTokenizer

        return AlbertTokenizer(path, lowercase)

    def train(self, input_files, vocab_size, output, lowercase=False, verbose=False):
        """Writes `output`.model and .vocab (`training.ALBERT_TRAINER_OPTIONS`)."""
        from albert_tf.tokenizer.sentencepiece.training import train_sentencepiece

        path = train_sentencepiece(input_files, vocab_size, output, lowercase=lowercase,
                                   verbose=verbose)
        vocab = SpmVocab(path)
        return (f"wrote {path} ({vocab.size} pieces, special ids {vocab.special_ids}, "
                f"{'uncased' if vocab.casing().uncased else 'cased'})")

    def save(self, tokenizer, directory):
        # The model bytes: a tokenizer may have been built from bytes, not a file.
        with open(os.path.join(directory, self.file_name), "wb") as f:
            f.write(tokenizer.proto)
        return {"type": self.name, "file": self.file_name, "lowercase": bool(tokenizer.lowercase)}


register(SentencePieceType())
