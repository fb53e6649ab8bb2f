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
    host_form = "albert_tf.tokenizer.sentencepiece.host:HostTokenizer"
    graph_form = "albert_tf.tokenizer.sentencepiece.layer:AlbertTokenizer"

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
