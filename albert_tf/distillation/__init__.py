"""Task-specific distillation: a fine-tuned teacher's outputs train a smaller ALBERT.

`losses` (soft targets, hidden states, attention, the layer map),
`distiller.Distiller` (the trained model around the student),
`teacher_cache` (the teacher's outputs, computed once, on disk),
`run` (the run behind `python -m albert_tf.distill`) and `settings`.
"""
