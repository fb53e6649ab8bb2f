"""Serving exports of fine-tuned models: SavedModels for TF Serving, and TFLite.

    python -m albert_tf.export --model_dir=runs/squad_v2 --export_dir=exports/squad_v2

A task builds its serving module (`tasks.base.Task.serving_module`, on
`base.ServingModule`); `exporter.write_export` writes `<export_dir>/<version>/`,
a SavedModel with two signatures (SERVING.md lists every input and output):

- `serving_default`: raw text in (`text`, or `text_a`/`text_b`, or
  `question`/`context`; string `(batch_size,)`), the task's answer out. The
  tokenization, packing, SQuAD windowing and span decoding are all in the
  graph and agree with the host pipeline of `tasks` (tested).
- `encoded`: token ids in, the model's raw outputs out.

Loading needs only `tensorflow` and `tensorflow_text` (for its SentencePiece
op): `import tensorflow_text` before `tf.saved_model.load`.

Names are imported on first use, so that `--help` starts without TensorFlow.
"""

import os

from albert_tf.lazy import lazy_exports

# What an export holds besides the SavedModel (read by albert_tf.predict
# without importing TensorFlow).
INFO_FILE = os.path.join("assets.extra", "albert_tf_export.json")

_EXPORTS = {
    "ExportSettings": "albert_tf.export.settings",
    "check_version": "albert_tf.export.exporter",
    "write_export": "albert_tf.export.exporter",
    "next_version": "albert_tf.export.exporter",
    "resolve_model_dir": "albert_tf.export.exporter",
    "versions": "albert_tf.export.exporter",
    "ServingModule": "albert_tf.export.base",
    "ClassifierServing": "albert_tf.export.classification",
    "MultiLabelServing": "albert_tf.export.classification",
    "SquadServing": "albert_tf.export.squad",
    "TfliteModel": "albert_tf.export.formats.tflite.convert",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
