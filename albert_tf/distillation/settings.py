"""`DistillSettings`: a fine-tuning run's settings plus the teacher and the loss mix."""

import dataclasses

from albert_tf.settings import NON_NEGATIVE, POSITIVE_REAL, setting
from albert_tf.training.settings import FinetuneSettings


@dataclasses.dataclass(frozen=True, kw_only=True)
class DistillSettings(FinetuneSettings):
    """A distillation run: the student is fine-tuned on the teacher's task and data.

    Fields a new run does not give come from the teacher's own run (its
    task, data, options, recipe and sequence length), so the student sees
    the data exactly as the teacher was trained on it.
    """

    teacher: str = setting(help="The fine-tuned teacher: a model folder (or the fine-tuning "
                           "run's output folder holding it).", roles=("reads",))
    student: str = setting(help="The student: a model preset (e.g. albert_tiny) or config "
                           "file (random initialisation, or --init_from_teacher), or a "
                           "pretrained checkpoint.")
    temperature: float = setting(2.0, "Temperature of the soft targets.", rule=POSITIVE_REAL)
    hard_weight: float = setting(0.5, "Weight of the task loss on the labels.",
                                 rule=NON_NEGATIVE)
    soft_weight: float = setting(0.5, "Weight of the soft-target loss (the teacher's outputs).",
                                 rule=NON_NEGATIVE)
    hidden_weight: float = setting(
        0.0, "Weight of the hidden-state MSE on the mapped layers (0: off).", rule=NON_NEGATIVE)
    attention_weight: float = setting(
        0.0, "Weight of the attention KL on the mapped layers (0: off).", rule=NON_NEGATIVE)
    layer_map: str = setting(
        "", "Layers the intermediate losses pair, student:teacher, e.g. 0:0,1:4,2:8,3:12 (layer "
        "l: the l-th application of a block, shared or not; 0: the embedding output). "
        "Default: spread evenly.")
    init_from_teacher: bool = setting(
        False, "Start the student from the teacher's weights where the shapes fit: "
        "embeddings, the first stored blocks, pooler and head.")
    cache_teacher: bool = setting(
        True, "Compute the teacher's outputs once and keep them in <output_dir>/teacher/ "
        "(off: run the teacher in every step; intermediate losses always do).")

    def checks(self):
        return (*super().checks(),
                ("teacher", bool(self.teacher), "a fine-tuned model folder"),
                ("student", bool(self.student), "a preset, config file or checkpoint"),
                (self.hard_weight + self.soft_weight + self.hidden_weight
                 + self.attention_weight > 0,
                 "every loss weight is 0 (hard, soft, hidden, attention): nothing to learn"))

    def finetune_settings(self):
        """These settings without the distillation fields: what the student's
        model folder stores, as a fine-tuned model's."""
        names = {f.name for f in dataclasses.fields(FinetuneSettings)}
        return FinetuneSettings(**{k: v for k, v in self.__dict__.items() if k in names})


# The fields of DistillSettings that FinetuneSettings does not have.
DISTILL_FIELDS = tuple(f.name for f in dataclasses.fields(DistillSettings)
                       if f.name not in {g.name for g in dataclasses.fields(FinetuneSettings)})
