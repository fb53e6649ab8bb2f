"""TFLite: the `encoded` signature at a fixed `max_seq_length`.

Text processing stays on the host (TFLite has no SentencePiece op): give the
model `token_ids`, `segment_ids`, `padding_mask` (and `p_mask` for question
answering) as int32 `(batch_size, max_seq_length)`, padded to exactly
`max_seq_length`. The batch size is free (the signature runner resizes).

Variants (`albert_tf.export.formats.tflite.VARIANTS`), all with int32 ids in and float32 outputs:
- `float32`: no reduction.
- `float16`: weights stored as float16, dequantized to float32 when loaded.
- `dynamic_int8` (`quantize=True`): weights stored as int8, activations
  computed in float (`tf.lite.Optimize.DEFAULT` without a representative dataset).
- `int8`: full-integer: weights and activations int8, every op an int8
  builtin (`TFLITE_BUILTINS_INT8`); the activation ranges are calibrated on
  a representative dataset, encoded inputs of real examples of the task.
"""

import os
import tempfile
import warnings

import numpy as np
import tensorflow as tf

from albert_tf.export.base import token_specs
from albert_tf.export.formats.tflite import VARIANTS as TFLITE_VARIANTS

SIGNATURE = "encoded"


def _fixed_length_module(module, batch_size=None):
    """A module with only `encoded`, its inputs fixed to `max_seq_length` tokens
    (and to `batch_size` rows when given: runtimes that cannot resize, LiteRT.js)."""
    fixed = tf.Module(name="albert_tflite")
    names = module.input_names

    def encoded(*tensors):
        return module.run_model(dict(zip(names, tensors)))

    specs = [tf.TensorSpec([batch_size, module.max_seq_length], s.dtype, name=s.name)
             for s in token_specs(names, module.max_seq_length)]
    function = tf.function(encoded, autograph=False,
                           input_signature=specs).get_concrete_function()
    # Saved through the captures (see `ServingModule`): else the converter finds no weights.
    fixed.captured_variables = list(function.variables)
    return fixed, function


def variant_name(quantize):
    """The variant `quantize` names: False/None -> float32, True -> dynamic_int8
    (the original `--quantize`), or one of `TFLITE_VARIANTS`."""
    if quantize is None or quantize is False:
        return "float32"
    if quantize is True:
        return "dynamic_int8"
    if quantize not in TFLITE_VARIANTS:
        raise ValueError(f"unknown TFLite variant {quantize!r}; choose from "
                         f"{', '.join(TFLITE_VARIANTS)}")
    return quantize


def _check_representative(module, representative):
    """Rejects representative inputs that are not what the model takes."""
    if not representative:
        raise ValueError("the full-integer int8 TFLite variant needs a representative dataset "
                         "(export --eval_data=the task's data folder)")
    wanted = (module.max_seq_length,)
    for name in module.input_names:
        array = representative.get(name)
        if array is None or array.ndim != 2 or array.shape[1:] != wanted or not len(array):
            shape = None if array is None else array.shape
            raise ValueError(f"representative dataset: {name} must be (examples, "
                             f"{module.max_seq_length}), got {shape}")


def configure(converter, variant, module, representative):
    """Sets the converter's optimizations for `variant` (see the module docstring)."""
    if variant == "float32":
        return
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if variant == "float16":
        converter.target_spec.supported_types = [tf.float16]
    elif variant == "int8":
        _check_representative(module, representative)
        rows = len(representative[module.input_names[0]])

        def examples():  # one example per calibration step, as the model is served
            for i in range(rows):
                yield {name: np.asarray(representative[name][i:i + 1], np.int32)
                       for name in module.input_names}

        converter.representative_dataset = examples
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]


def convert(module, quantize=False, representative=None, batch_size=None):
    """The TFLite flatbuffer (bytes) of a `ServingModule`'s model.

    quantize: the variant (see `variant_name`). representative: for `int8`,
    a dict of the model's inputs, int32 `(examples, max_seq_length)` each.
    """
    variant = variant_name(quantize)
    fixed, function = _fixed_length_module(module, batch_size)
    with tempfile.TemporaryDirectory() as tmp:
        tf.saved_model.save(fixed, tmp, signatures={SIGNATURE: function})
        converter = tf.lite.TFLiteConverter.from_saved_model(tmp, signature_keys=[SIGNATURE])
        configure(converter, variant, module, representative)
        try:
            return converter.convert()
        except Exception as e:  # the converter raises its own error types
            if variant != "int8":
                raise
            raise ValueError(f"full-integer int8 TFLite conversion failed: {_first_error(e)}; "
                             f"the dynamic_int8 variant quantizes the weights only") from None


def _first_error(error):
    """The converter's first `error:` line (its message runs to pages of MLIR)."""
    lines = [line.split("error:", 1)[1].strip() for line in str(error).splitlines()
             if "error:" in line]
    return lines[0] if lines else str(error).strip().splitlines()[0]


def write(module, path, quantize=False, representative=None, batch_size=None):
    """Writes `path` (.tflite); returns a description of it (JSON-able)."""
    variant = variant_name(quantize)
    flatbuffer = convert(module, variant, representative, batch_size)
    with open(path, "wb") as f:
        f.write(flatbuffer)
    described = {"file": os.path.basename(path), "quantized": variant != "float32",
                 "variant": variant, "signature": SIGNATURE, "inputs": list(module.input_names),
                 "max_seq_length": module.max_seq_length, "bytes": len(flatbuffer)}
    if variant == "int8":
        described["calibration_examples"] = len(representative[module.input_names[0]])
    return described


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
