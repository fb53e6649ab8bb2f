"""`tflite`: the `encoded` signature as a TFLite model (token ids in), in four variants.

    --formats=tflite                 model.tflite, float32
    --formats=tflite:float16         model_float16.tflite, float16 weights
    --formats=tflite:dynamic_int8    model_dynamic_int8.tflite, int8 weights
    --formats=tflite:int8            model_int8.tflite, int8 weights and activations

`convert` converts and holds `TfliteModel`, the interpreter the measurement and
`predict` run it with.
"""

import os

from albert_tf.export.formats import Format, register

# variant -> (file, what it stores)
VARIANTS = {
    "float32": ("model.tflite", "no reduction"),
    "float16": ("model_float16.tflite", "float16 weights, dequantized when loaded"),
    "dynamic_int8": ("model_dynamic_int8.tflite", "int8 weights, float activations"),
    "int8": ("model_int8.tflite", "full-integer: int8 weights and activations, calibrated "
             "on --eval_data's --calibration_split"),
}


def _write(job, variant, path):
    from albert_tf.export.formats.tflite import convert

    return convert.write(job.module, path, variant, job.representative)


def _runners(folder, description):
    from albert_tf.export.comparison import tflite_runner

    return {f"tflite_{description['variant']}":
            tflite_runner(os.path.join(folder, description["file"]))}


register(Format(
    "tflite", "the encoded signature at max_seq_length (token ids in): " + "; ".join(
        f"{v}: {file}, {what}" for v, (file, what) in VARIANTS.items()),
    VARIANTS, _write, runners=_runners, calibrated=("int8",),
    # The spellings of earlier releases.
    aliases={"tflite_quantized": "tflite:dynamic_int8",
             **{variant: f"tflite:{variant}" for variant in VARIANTS}}))
