"""The options of the own-file text tasks (their `finetune` and `export` flags), light."""

import dataclasses

from albert_tf.settings import OPEN_PROBABILITY, PROBABILITY, Settings, setting
from albert_tf.tasks import user_files
from albert_tf.tasks.long_inputs import LongInputOptions
from albert_tf.tasks.losses import LossOptions

CLASS_WEIGHTS = ("none", "balanced")


@dataclasses.dataclass(frozen=True, kw_only=True)
class TextOptions(user_files.FileOptions, LongInputOptions):
    """The options of text_classification and text_regression (each a `finetune` flag)."""

    text_column: str = setting("text", "Text tasks: the column of the text.")
    text_pair_column: str = setting("", "Text tasks: the column of the second text of a pair "
                                    "(none: one text).")
    label_column: str = setting("label", "Text tasks: the column of the label (regression: "
                                "the score).")
    multi_label: bool = setting(False, "text_classification: any number of labels a row (a "
                                "JSON list, or joined by --label_separator).")
    label_separator: str = setting("", "Multi-label: what joins a row's labels in a text "
                                   "field (needed for CSV and TSV), e.g. '|'.")
    class_weights: str = setting("none", "text_classification: weigh the loss of each class; "
                                 "balanced: n_rows / (n_classes * rows of the class).",
                                 choices=CLASS_WEIGHTS)
    heldout_fraction: float = setting(0.1, "Multi-label: the share of training rows held out "
                                      "to choose the threshold.", rule=PROBABILITY)

    def checks(self):
        return (*super().checks(),
                ("text_column", bool(self.text_column), "a column name"),
                ("label_column", bool(self.label_column), "a column name"))


@dataclasses.dataclass(frozen=True, kw_only=True)
class TextClassificationOptions(TextOptions, LossOptions):
    """text_classification's options: text_regression's and the classification loss."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class TextExportOptions(Settings):
    """What a text_classification export takes (the export command's flags)."""

    threshold: float | None = setting(
        None, "Multi-label text_classification: predict a label at this probability "
        "(default: the threshold chosen on held-out training rows).", rule=OPEN_PROBABILITY)
