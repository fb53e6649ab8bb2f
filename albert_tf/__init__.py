"""albert_tf: ALBERT (Lan et al., ICLR 2020) for Keras 3 and TensorFlow.

Names are imported on first use, so that light tools (the config, the
resource report) start without loading TensorFlow.
"""

from albert_tf.commands import install_aliases
from albert_tf.lazy import lazy_exports

_EXPORTS = {
    "AlbertBackbone": "albert_tf.backbone",
    "AlbertConfig": "albert_tf.config",
    "AlbertPretrainingModel": "albert_tf.models.pretraining",
    "CheckpointError": "albert_tf.checkpoints",
    "detect_format": "albert_tf.checkpoints",
    "export_hf": "albert_tf.checkpoints",
    "load_pretrained": "albert_tf.checkpoints",
    "load_tokenizer": "albert_tf.tokenizer.loading",
    "save_pretrained": "albert_tf.checkpoints",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

# `python -m albert_tf.finetune` and the other commands, and `albert_tf.api`.
install_aliases()
