"""`text_classification` and `text_regression`: fine-tuning on the user's own files.

`data` reads the files (CSV, TSV or JSON lines: `tasks.user_files`) and their
label sets, `model` is the head with its label set (`TextClassifier`), `report`
the metrics and confusion matrices, `task` the tasks themselves.
"""

from albert_tf.tasks.base import Declared, recipes_file
from albert_tf.tasks.text_classification.options import (TextClassificationOptions,
                                                        TextExportOptions, TextOptions)

_RECIPES = recipes_file(__file__)

DECLARED = (
    Declared("text_classification", f"{__name__}.task", TextClassificationOptions,
             TextExportOptions,
             recipes=_RECIPES),
    Declared("text_regression", f"{__name__}.task", TextOptions, recipes=_RECIPES),
)
