"""The loss options of the classification tasks (their `finetune` flags), light.

Every task whose head is a softmax over classes (GLUE's and CLUE's
classification tasks, `text_classification`, `token_classification` without
`--crf`, `multiple_choice`, RACE, C3, CHID) takes `LossOptions` among its
options; the others (STS-B and `text_regression`, a squared error; SQuAD and
CMRC 2018, whose span positions are not classes of a label set; a CRF, trained
by the tag sequence's log-likelihood) do not, and refuse the flags as options
they do not have. The head computes the loss (`albert_tf.models.losses`).
"""

import dataclasses

from albert_tf.settings import NON_NEGATIVE, PROBABILITY, Settings, setting

LOSSES = ("cross_entropy", "focal")


@dataclasses.dataclass(frozen=True, kw_only=True)
class LossOptions(Settings):
    """The training loss of a classification head."""

    loss: str = setting(
        "cross_entropy", "Classification tasks: the training loss: cross_entropy, or focal "
        "(Lin et al. 2017: each class's term weighted by (1 - p)^gamma, so that examples the "
        "model already gets right count less; for skewed labels).", choices=LOSSES)
    focal_gamma: float = setting(2.0, "--loss=focal: the exponent gamma (0: cross-entropy).",
                                 rule=NON_NEGATIVE)
    label_smoothing: float = setting(
        0.0, "Classification tasks: train towards 1 - S on the label and S spread evenly over "
        "the classes (Szegedy et al. 2016; Keras' label_smoothing); 0: one-hot targets.",
        rule=PROBABILITY)

    def head_loss(self):
        """The head's `head_loss` argument (`albert_tf.models.losses`): None for plain
        cross-entropy."""
        if self.loss == "cross_entropy" and not self.label_smoothing:
            return None
        loss = {"kind": self.loss, "label_smoothing": self.label_smoothing}
        return {**loss, "gamma": self.focal_gamma} if self.loss == "focal" else loss

    def loss_chosen(self):
        """Whether a loss other than plain cross-entropy was asked for."""
        return self.head_loss() is not None


def head_loss(options):
    """The head's loss of a task's `options`: theirs (`LossOptions.head_loss`), or
    None (cross-entropy) for options without the loss options (a task type of one's
    own on another options class)."""
    return options.head_loss() if isinstance(options, LossOptions) else None

