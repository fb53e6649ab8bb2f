"""`Distiller`: a student task model trained on its labels and its teacher's outputs."""

import dataclasses

import keras
import tensorflow as tf

from albert_tf.distillation import losses
from albert_tf.layers.common import kernel_initializer
from albert_tf.models.base import TaskModel

TEACHER_PREFIX = "teacher_"  # a label array `teacher_<output>`: the teacher's output


@dataclasses.dataclass(frozen=True)
class LossWeights:
    """How the student's loss is made (see `albert_tf.distillation.losses`).

    hard: weight of the task loss on the labels; soft: of the soft targets;
    temperature: of the soft targets; hidden, attention: of the intermediate
    losses (0: off); layer_map: `(student layer, teacher layer)` pairs
    (layer 0, the embedding output, pairs hidden states only).
    """

    hard: float = 0.5
    soft: float = 0.5
    temperature: float = 2.0
    hidden: float = 0.0
    attention: float = 0.0
    layer_map: tuple = ()

    @property
    def intermediate(self):
        return bool(self.hidden or self.attention)


class _Untracked:
    """Holds the teacher out of Keras' and the checkpoint's sight: its weights
    are neither trained nor saved with the student."""

    def __init__(self, model):
        self.model = model


def _layers(record):
    # A model's outputs are nests of tensors: the record as a dict of lists.
    return {"hidden_states": list(record.hidden_states),
            "attention_probs": list(record.attention_probs)}


class Distiller(TaskModel):
    """Trains `student` (a task model) with `weights`' mix of losses.

    The teacher's outputs come with the labels, as `teacher_<name>` arrays
    (computed once, `albert_tf.distillation.teacher_cache`), or, with
    `online=True` or intermediate losses (which need its layers), from the
    teacher run in inference mode inside each step. Only the student (and
    the projection of its hidden states to the teacher's width, when the
    hidden-state loss needs one) is trained and checkpointed.

    Logged: `loss`, and its parts `hard`, `soft`, `hidden`, `attention`.
    """

    def __init__(self, student, teacher, weights, online=False, **kwargs):
        super().__init__(**kwargs)
        if not student.distilled_outputs:
            raise ValueError(f"the {student.head_kind} head has no outputs a student can learn "
                             "from a teacher's (distillation takes classification, "
                             "token-classification, span question-answering and "
                             "multiple-choice heads)")
        self.student = student
        self._teacher = _Untracked(teacher)
        self.mix = weights
        self.online = bool(online or weights.intermediate)
        s, t = student.backbone.config, teacher.backbone.config
        self.projection = None
        if weights.hidden and s.hidden_dim != t.hidden_dim:
            self.projection = keras.layers.Dense(
                t.hidden_dim, kernel_initializer=kernel_initializer(s.initializer_range),
                name="hidden_projection")
            self.projection.build((None, None, s.hidden_dim))
        if weights.attention and s.num_heads != t.num_heads:
            raise ValueError(f"the attention loss compares head by head: the student has "
                             f"{s.num_heads} heads, the teacher {t.num_heads} (use "
                             "--attention_weight=0 or a student with as many heads)")
        # Keras logs the metrics a model holds: one per loss part in use.
        self.parts = {name: keras.metrics.Mean(name=name)
                      for name in ("hard", "soft", "hidden", "attention")
                      if name in ("hard", "soft") or getattr(weights, name)}

    @property
    def teacher(self):
        return self._teacher.model

    @property
    def backbone(self):
        return self.student.backbone

    def call(self, inputs, training=None):
        outputs = self._outputs(self.student, inputs, training)
        if "layers" in outputs:
            outputs["student_layers"] = outputs.pop("layers")
        if self.online:
            outputs["teacher"] = tf.nest.map_structure(
                tf.stop_gradient, self._outputs(self.teacher, inputs, False))
        return outputs

    def _outputs(self, model, inputs, training):
        """`model`'s outputs, with its layers' record under `layers` when an
        intermediate loss reads them."""
        if not self.mix.intermediate:
            return dict(model(inputs, training=training))
        with model.backbone.recording() as record:
            outputs = dict(model(inputs, training=training))
        outputs["layers"] = _layers(record)
        return outputs

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        w = self.mix
        labels = {k: v for k, v in y.items() if not k.startswith(TEACHER_PREFIX)}
        teacher = y_pred.get("teacher") or {
            k[len(TEACHER_PREFIX):]: v for k, v in y.items() if k.startswith(TEACHER_PREFIX)}
        parts = {"hard": self.student.compute_loss(x, labels, y_pred, sample_weight, training)}
        parts["soft"] = tf.add_n([
            losses.soft_target_loss(kind, y_pred[name], teacher[name], w.temperature,
                                    self.student.distillation_weights(x, labels, name))
            for name, kind in self.student.distilled_outputs.items()])
        if w.intermediate:
            parts.update(self._intermediate(x, y_pred["student_layers"], teacher["layers"]))
        total = w.hard * parts["hard"] + w.soft * parts["soft"]
        total += sum(getattr(w, name) * parts[name] for name in ("hidden", "attention")
                     if name in parts)
        for name, value in parts.items():
            # Logged per example as the loss is (each part is a replica's share).
            self.parts[name].update_state(value * tf.distribute.get_strategy()
                                          .num_replicas_in_sync)
        return total

    def _intermediate(self, x, student, teacher):
        mask = x["padding_mask"]
        parts = {}
        if self.mix.hidden:
            terms = []
            for s, t in self.mix.layer_map:
                state = student["hidden_states"][s]
                if self.projection is not None:
                    state = self.projection(state)
                terms.append(losses.hidden_state_loss(state, teacher["hidden_states"][t], mask))
            parts["hidden"] = tf.add_n(terms)
        if self.mix.attention:
            parts["attention"] = tf.add_n([
                losses.attention_loss(student["attention_probs"][s - 1],
                                      teacher["attention_probs"][t - 1], mask)
                for s, t in self.mix.layer_map if s > 0 and t > 0])
        return parts

    def head_config(self):
        return self.student.head_config()
