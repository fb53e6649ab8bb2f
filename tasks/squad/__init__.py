"""Extractive question answering (SQuAD v1.1 / v2.0), the task layer.

`task` registers the `squad` task (options, model, evaluation, serving
module); `data` reads the JSON files and featurizes questions into
sliding windows; `postprocess` decodes with the served model's functions
(`albert_tf.steps.squad_decode`), lists the n-best answers and writes the
official prediction files; `evaluate` is the official v1.1 / v2.0 scoring
(`python -m albert_tf.tasks.squad.evaluate`, without TensorFlow).
"""
