"""The toy task's options: light, checked before TensorFlow loads."""

import dataclasses

from albert_tf.settings import OPEN_PROBABILITY, POSITIVE, Settings, setting


@dataclasses.dataclass(frozen=True, kw_only=True)
class QuestionOptions(Settings):
    min_words: int = setting(1, "toy_question: sentences of fewer words are left out.",
                             rule=POSITIVE)


@dataclasses.dataclass(frozen=True, kw_only=True)
class QuestionExportOptions(Settings):
    min_probability: float = setting(0.5, "toy_question: is_question from this probability.",
                                     rule=OPEN_PROBABILITY)
