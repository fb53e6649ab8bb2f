"""albert_tf: ALBERT (Lan et al., ICLR 2020) for Keras 3 and TensorFlow.

Names are imported on first use, so that light tools (the config, the
resource report) start without loading TensorFlow.
"""

import importlib

_EXPORTS = {
    "AlbertBackbone": "albert_tf.backbone",
    "AlbertConfig": "albert_tf.config",
    "AlbertPretrainingModel": "albert_tf.pretraining_model",
    "CheckpointError": "albert_tf.checkpoints",
    "detect_format": "albert_tf.checkpoints",
    "export_hf": "albert_tf.checkpoints",
    "load_pretrained": "albert_tf.checkpoints",
    "save_pretrained": "albert_tf.checkpoints",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'albert_tf' has no attribute {name!r}")


def __dir__():
    return __all__
