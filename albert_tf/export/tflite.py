"""TFLite: the `encoded` signature at a fixed `max_seq_length`.

Text processing stays on the host (TFLite has no SentencePiece op): give the
model `token_ids`, `segment_ids`, `padding_mask` (and `p_mask` for question
answering) as int32 `(batch_size, max_seq_length)`, padded to exactly
`max_seq_length`. The batch size is free (the signature runner resizes).

`quantize` applies dynamic-range quantization (`tf.lite.Optimize.DEFAULT`
without a representative dataset): weights stored as int8, activations
computed in float.
"""

import os
import tempfile
import warnings

import numpy as np
import tensorflow as tf

from albert_tf.export.base import token_specs

SIGNATURE = "encoded"


def _fixed_length_module(module):
    """A module with only `encoded`, its inputs fixed to `max_seq_length` tokens."""
    fixed = tf.Module(name="albert_tflite")
    names = module.input_names

    def encoded(*tensors):
        return module.run_model(dict(zip(names, tensors)))

    function = tf.function(encoded, autograph=False, input_signature=token_specs(
        names, module.max_seq_length)).get_concrete_function()
    # Saved through the captures (see `ServingModule`): else the converter finds no weights.
    fixed.captured_variables = list(function.variables)
    return fixed, function


def convert(module, quantize=False):
    """The TFLite flatbuffer (bytes) of a `ServingModule`'s model."""
    fixed, function = _fixed_length_module(module)
    with tempfile.TemporaryDirectory() as tmp:
        tf.saved_model.save(fixed, tmp, signatures={SIGNATURE: function})
        converter = tf.lite.TFLiteConverter.from_saved_model(tmp, signature_keys=[SIGNATURE])
        if quantize:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        return converter.convert()


def write(module, path, quantize=False):
    """Writes `path` (.tflite); returns a description of it (JSON-able)."""
    flatbuffer = convert(module, quantize)
    with open(path, "wb") as f:
        f.write(flatbuffer)
    return {"file": os.path.basename(path), "quantized": bool(quantize),
            "signature": SIGNATURE, "inputs": list(module.input_names),
            "max_seq_length": module.max_seq_length, "bytes": len(flatbuffer)}


def _interpreter_class():
    try:  # LiteRT, tf.lite.Interpreter's successor, where installed
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        Interpreter = tf.lite.Interpreter
    return Interpreter


class TfliteModel:
    """Runs a `.tflite` export: `model(token_ids=..., ...)` -> dict of numpy arrays.

    Args:
        path: the `.tflite` file (or `content`: its bytes).
    """

    def __init__(self, path=None, content=None):
        with warnings.catch_warnings():
            # tf.lite.Interpreter warns that it is deprecated; it still works in
            # TF 2.21, and LiteRT is used instead where it is installed.
            warnings.filterwarnings("ignore", message=".*tf.lite.Interpreter is deprecated")
            interpreter = _interpreter_class()(model_path=path, model_content=content)
        self._runner = interpreter.get_signature_runner(SIGNATURE)
        details = self._runner.get_input_details()
        self.input_names = tuple(sorted(details))
        self.max_seq_length = int(next(iter(details.values()))["shape_signature"][1])

    def __call__(self, **inputs):
        missing = sorted(set(self.input_names) - set(inputs))
        if missing:
            raise ValueError(f"TfliteModel: missing inputs {missing}; needs {self.input_names}")
        arrays = {k: np.asarray(inputs[k], np.int32) for k in self.input_names}
        for name, array in arrays.items():
            if array.ndim != 2 or array.shape[1] != self.max_seq_length:
                raise ValueError(f"TfliteModel: {name} must be (batch_size, "
                                 f"{self.max_seq_length}), got {array.shape}")
        return self._runner(**arrays)
