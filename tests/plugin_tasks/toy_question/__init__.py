"""`toy_question`: is a sentence a question? A task type from outside albert_tf.

This folder is all of it (found through `ALBERT_TF_TASK_PATH`, or
`tasks.add_task_path` in a test): its options (a `finetune` flag), its export
option (an `export` flag), its head (one logit), its serving form (raw input
`sentence`, outputs `is_question` and `probability`) and the decoder its web
bundle runs (`web_decoder.js`).
"""

from albert_tf.tasks.base import Declared, recipes_file
from albert_tf.tasks.toy_question.options import QuestionExportOptions, QuestionOptions

DECLARED = (
    Declared("toy_question", f"{__name__}.task", QuestionOptions, QuestionExportOptions,
             recipes=recipes_file(__file__), data_folder="the folder of train.jsonl, dev.jsonl"),
)
