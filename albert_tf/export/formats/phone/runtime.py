"""`PhoneModel`: runs a phone export (`mediapipe/*.tflite`) on raw text, without TensorFlow.

With MediaPipe installed (`pip install "albert-tf[mobile]"`) the file runs in MediaPipe's
own `TextClassifier` / `TextEmbedder`, as on a phone; else in LiteRT (`ai-edge-litert`,
the successor of `tf.lite.Interpreter`), tokenized here with the tokenizer packed in
the file: the stock SentencePiece on its model (whose normalizer does ALBERT's
preprocessing), or albert_tf's WordPiece on its vocab.txt.
"""

import importlib.util
import io
import zipfile

import numpy as np

LABELS_FILE = "labels.txt"
SIGNATURE = "serving_default"


def _packed_files(path):
    with open(path, "rb") as f:
        content = f.read()
    stream = io.BytesIO(content)
    if not zipfile.is_zipfile(stream):
        raise ValueError(f"{path}: no files packed in it; not a phone export (mediapipe)")
    with zipfile.ZipFile(stream) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def runtime_name():
    """"mediapipe" when it is installed, else "litert"."""
    return "mediapipe" if importlib.util.find_spec("mediapipe") else "litert"


class PhoneModel:
    """A phone export on raw text: `model(texts)` -> `{"label", "label_id",
    "probabilities"}` (a classifier, as the SavedModel's `serving_default` gives them)
    or `{"embedding"}` (an embedder), numpy arrays with one row per text.

    Args:
        path: the `.tflite` file.
        runtime: "mediapipe", "litert" or None (MediaPipe where installed).
    """

    def __init__(self, path, runtime=None):
        self.path = path
        self.files = _packed_files(path)
        labels = self.files.get(LABELS_FILE)
        self.labels = None if labels is None else labels.decode("utf-8").splitlines()
        self.runtime = runtime or runtime_name()
        self._run = (self._mediapipe() if self.runtime == "mediapipe" else self._litert())

    def __call__(self, texts):
        rows = [self._run(text) for text in texts]
        if self.labels is None:
            return {"embedding": np.array(rows, np.float32)}
        probabilities = np.array(rows, np.float32)
        label_id = probabilities.argmax(axis=1).astype(np.int32)
        return {"label": np.array([self.labels[i].encode("utf-8") for i in label_id], object),
                "label_id": label_id, "probabilities": probabilities}

    def _mediapipe(self):
        from mediapipe.tasks.python import core, text

        base = core.base_options.BaseOptions(model_asset_path=self.path)
        if self.labels is None:
            embedder = text.TextEmbedder.create_from_options(
                text.TextEmbedderOptions(base_options=base))
            return lambda t: embedder.embed(t).embeddings[0].embedding
        classifier = text.TextClassifier.create_from_options(
            text.TextClassifierOptions(base_options=base, max_results=-1))

        def classify(sentence):
            row = np.zeros(len(self.labels), np.float32)
            for category in classifier.classify(sentence).classifications[0].categories:
                row[category.index] = category.score
            return row
        return classify

    def _litert(self):
        from ai_edge_litert.interpreter import Interpreter

        runner = Interpreter(model_path=self.path).get_signature_runner(SIGNATURE)
        length = int(runner.get_input_details()["input_word_ids"]["shape"][1])
        encode, cls_id, sep_id = self._tokenizer()

        def run(sentence):
            ids = [cls_id] + encode(sentence)[:length - 2] + [sep_id]
            pad = length - len(ids)
            outputs = runner(input_word_ids=np.array([ids + [0] * pad], np.int32),
                             input_mask=np.array([[1] * len(ids) + [0] * pad], np.int32),
                             input_type_ids=np.zeros((1, length), np.int32))
            return next(iter(outputs.values()))[0]
        return run

    def _tokenizer(self):
        """`(encode, cls id, sep id)` of the packed tokenizer."""
        from albert_tf.tokenizer.base import get_type

        spm_file = get_type("sentencepiece").file_name
        if spm_file in self.files:
            import sentencepiece

            stock = sentencepiece.SentencePieceProcessor(model_proto=self.files[spm_file])
            return stock.encode, stock.piece_to_id("[CLS]"), stock.piece_to_id("[SEP]")
        from albert_tf.tokenizer.wordpiece.host import HostWordPieceTokenizer

        vocabulary = self.files["vocab.txt"].decode("utf-8")
        host = HostWordPieceTokenizer(vocabulary.split("\n")[:-1], lowercase=True)
        return host.encode, host.cls_id, host.sep_id
