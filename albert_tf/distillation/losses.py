"""The losses a student learns from its teacher with, and the layer map.

Soft targets (Hinton et al. 2015), per row of an output (an example, or a
token of a per-token output), with temperature `T`:

- "softmax": `T^2 * KL(softmax(t / T) || softmax(s / T))` over the last axis;
- "sigmoid": `T^2 * mean over units of KL(Bernoulli(sigmoid(t / T)) ||
  Bernoulli(sigmoid(s / T)))`;
- "regression": `(s - t)^2` (no temperature: a regressor has no distribution).

`T^2` keeps the gradients' scale independent of `T`. Logits at or below
`-1e30` (masked answer positions, absent choices) are probability 0 and add
nothing.

Intermediate losses (TinyBERT, Jiao et al. 2020), on the layers the map pairs:

- hidden states: mean squared error between the student's state, through a
  learned projection when the widths differ, and the teacher's, over real
  tokens and the hidden units;
- attention: `KL(teacher || student)` of each head's distribution over the
  keys, averaged over heads and real query tokens (needs as many heads).

Every loss is a mean over this replica's rows divided by the number of
replicas (gradients are summed across replicas), as the task losses are.
"""

import tensorflow as tf

_FLOOR = -1e30  # logits at or below: probability 0
_EPSILON = 1e-12  # the smallest probability a log reads


def _replicas():
    return tf.distribute.get_strategy().num_replicas_in_sync


def weighted_mean(values, weights=None):
    """Mean of `values` over rows (weighted: `sum(w * v) / sum(w)`), for one
    replica of a summed-gradient run."""
    values = tf.cast(values, tf.float32)
    if weights is None:
        return tf.reduce_mean(values) / _replicas()
    weights = tf.cast(weights, tf.float32)
    return tf.reduce_sum(values * weights) / tf.maximum(tf.reduce_sum(weights), 1.0) / \
        _replicas()


def soft_target_rows(kind, student, teacher, temperature):
    """Per-row soft-target loss of one output (see the module docstring):
    `student`, `teacher` float `(..., units)`; returns `(...)`."""
    student, teacher = tf.cast(student, tf.float32), tf.cast(teacher, tf.float32)
    if kind == "regression":
        return tf.reduce_sum(tf.square(student - teacher), axis=-1)
    student = tf.maximum(student, _FLOOR) / temperature
    teacher = tf.maximum(teacher, _FLOOR) / temperature
    scale = temperature * temperature
    if kind == "softmax":
        log_t = tf.nn.log_softmax(teacher, axis=-1)
        log_s = tf.nn.log_softmax(student, axis=-1)
        return scale * tf.reduce_sum(tf.exp(log_t) * (log_t - log_s), axis=-1)
    if kind == "sigmoid":
        p = tf.sigmoid(teacher)
        # log sigmoid(z) and log(1 - sigmoid(z)) = log sigmoid(-z), stable.
        kl = (p * (tf.math.log_sigmoid(teacher) - tf.math.log_sigmoid(student))
              + (1 - p) * (tf.math.log_sigmoid(-teacher) - tf.math.log_sigmoid(-student)))
        return scale * tf.reduce_mean(kl, axis=-1)
    raise ValueError(f"unknown distilled output kind {kind!r}")


def soft_target_loss(kind, student, teacher, temperature, weights=None):
    """The soft-target loss of one output: the (weighted) mean of its rows'."""
    return weighted_mean(soft_target_rows(kind, student, teacher, temperature), weights)


def hidden_state_loss(student, teacher, padding_mask):
    """MSE of `(batch, seq, H)` states (the student's already projected to the
    teacher's width), averaged over the hidden units and the real tokens."""
    per_token = tf.reduce_mean(tf.square(tf.cast(student, tf.float32)
                                         - tf.cast(teacher, tf.float32)), axis=-1)
    return weighted_mean(per_token, padding_mask)


def attention_loss(student, teacher, padding_mask):
    """KL(teacher || student) of `(batch, heads, seq, seq)` attention
    distributions over their last axis (keys), averaged over heads and real
    query tokens; probabilities are read at least `1e-12` (padded keys are 0)."""
    student, teacher = tf.cast(student, tf.float32), tf.cast(teacher, tf.float32)
    kl = tf.reduce_sum(teacher * (tf.math.log(tf.maximum(teacher, _EPSILON))
                                  - tf.math.log(tf.maximum(student, _EPSILON))), axis=-1)
    heads = tf.shape(kl)[1]
    weights = tf.repeat(tf.cast(padding_mask, tf.float32)[:, None, :], heads, axis=1)
    return weighted_mean(kl, weights)


def default_layer_map(student_layers, teacher_layers):
    """`((0, 0), (1, j_1), ..., (L_s, L_t))`: the embedding outputs, then each
    student layer `i` with teacher layer `round(i * L_t / L_s)` (layers spread
    evenly, the last with the last)."""
    return ((0, 0),) + tuple((i, round(i * teacher_layers / student_layers))
                             for i in range(1, student_layers + 1))


def parse_layer_map(text, student_layers, teacher_layers):
    """`--layer_map` ("0:0,1:4,2:8,3:12": student layer : teacher layer) as
    pairs, checked against both models; empty text: `default_layer_map`.

    Layer `l` is the `l`-th application of a block (0: the embedding output,
    the first layer's input): a student of 4 layers that share one block
    has layers 1..4 all the same weights, each paired on its own.
    """
    if not text:
        return default_layer_map(student_layers, teacher_layers)
    pairs = []
    for item in text.split(","):
        parts = item.strip().split(":")
        if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
            raise ValueError(f"--layer_map: {item.strip()!r} is not student:teacher (two "
                             "layer numbers, e.g. 1:4)")
        s, t = int(parts[0]), int(parts[1])
        if s > student_layers:
            raise ValueError(f"--layer_map: {item.strip()!r}: the student has layers 0.."
                             f"{student_layers}")
        if t > teacher_layers:
            raise ValueError(f"--layer_map: {item.strip()!r}: the teacher has layers 0.."
                             f"{teacher_layers}")
        pairs.append((s, t))
    return tuple(pairs)
