"""The options of the multiple-choice tasks (their `finetune` flags), light."""

import dataclasses

from albert_tf.settings import POSITIVE, setting
from albert_tf.tasks.losses import LossOptions
from albert_tf.tasks.user_files import FileOptions

ALBERT_MAX_QA_LENGTH = 128  # run_race.py's --max_qa_length


@dataclasses.dataclass(frozen=True, kw_only=True)
class ChoiceOptions(LossOptions):
    max_qa_length: int = setting(
        ALBERT_MAX_QA_LENGTH, "Multiple choice: the question with a choice keeps its last this "
        "many tokens (run_race.py's max_qa_length); the context is truncated first.",
        rule=POSITIVE)


@dataclasses.dataclass(frozen=True, kw_only=True)
class MultipleChoiceOptions(FileOptions, ChoiceOptions):
    pass
