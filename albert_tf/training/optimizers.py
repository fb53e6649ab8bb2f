"""The optimizers of the reference implementation, as Keras 3 optimizers.

google-research/albert `optimization.py` fine-tunes with
`AdamWeightDecayOptimizer` and pretrains with `LAMBOptimizer`
(`lamb_optimizer.py`). Both differ from Keras' built-ins in ways that matter
for matching its recipes: neither applies Adam's bias correction, and both
exclude LayerNorm parameters and biases from weight decay (LAMB also from the
layer-wise trust ratio). Learning rate: linear warmup from 0, then linear
decay to 0 computed from step 0 (`polynomial_decay` with power 1 over all
steps), as the reference does.
"""

import re

import keras
import tensorflow as tf
from keras import ops

# The reference's `exclude_from_weight_decay`, matched against variable paths.
EXCLUDE_FROM_WEIGHT_DECAY = ("layer_norm", "LayerNorm", "bias")


@keras.saving.register_keras_serializable(package="albert_tf")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """`lr * step / warmup` during warmup, then `lr * (1 - step / total)`.

    Steps count optimizer updates. Keras calls a schedule with its micro-batch
    counter, which runs `accumulation_steps` times faster under gradient
    accumulation; it is divided back here, so that an update made of k
    micro-batches uses the same rate as one big batch would.
    """

    def __init__(self, learning_rate, total_steps, warmup_steps, accumulation_steps=1):
        if total_steps < 1 or not 0 <= warmup_steps <= total_steps:
            raise ValueError(f"need 0 <= warmup_steps ({warmup_steps}) <= total_steps "
                             f"({total_steps}) and total_steps >= 1")
        self.learning_rate = learning_rate
        self.total_steps = total_steps
        self.warmup_steps = warmup_steps
        self.accumulation_steps = accumulation_steps

    def __call__(self, step):
        step = ops.cast(ops.floor_divide(step, self.accumulation_steps), "float32")
        decayed = self.learning_rate * ops.maximum(0.0, 1.0 - step / self.total_steps)
        if not self.warmup_steps:
            return decayed
        warmup = self.learning_rate * step / self.warmup_steps
        return ops.where(step < self.warmup_steps, warmup, decayed)

    def get_config(self):
        return {"learning_rate": self.learning_rate, "total_steps": self.total_steps,
                "warmup_steps": self.warmup_steps,
                "accumulation_steps": self.accumulation_steps}


class _ReferenceOptimizer(keras.optimizers.Optimizer):
    """Adam moments without bias correction; exclusions by variable path."""

    def __init__(self, learning_rate, weight_decay=0.01, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-6, exclude_from_weight_decay=EXCLUDE_FROM_WEIGHT_DECAY,
                 name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name or type(self).__name__,
                         **kwargs)
        self.decay_rate = weight_decay
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
        self.exclude_patterns = tuple(exclude_from_weight_decay)
        self._exclude = re.compile("|".join(map(re.escape, self.exclude_patterns)))

    def excluded(self, variable):
        """Whether a Keras variable is exempt from decay (and trust ratio)."""
        return bool(self._exclude.search(variable.path))

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._m, self._v = self.add_optimizer_variables(var_list, ["m", "v"])
        # update_step receives backend variables, which have no Keras path.
        self._excluded = [self.excluded(v) for v in var_list]

    def _adam_direction(self, gradient, variable):
        """Updates the moments; returns m / (sqrt(v) + eps) (no bias correction)."""
        gradient = ops.cast(gradient, variable.dtype)
        index = self._get_variable_index(variable)
        m, v = self._m[index], self._v[index]
        self.assign(m, self.beta_1 * m + (1.0 - self.beta_1) * gradient)
        self.assign(v, self.beta_2 * v + (1.0 - self.beta_2) * ops.square(gradient))
        update = m / (ops.sqrt(v) + self.epsilon)
        if self.decay_rate > 0 and not self._excluded[index]:
            update = update + self.decay_rate * variable
        return update

    def get_config(self):
        config = super().get_config()
        config.update({"weight_decay": self.decay_rate, "beta_1": self.beta_1,
                       "beta_2": self.beta_2, "epsilon": self.epsilon,
                       "exclude_from_weight_decay": self.exclude_patterns})
        return config


@keras.saving.register_keras_serializable(package="albert_tf")
class AdamWeightDecay(_ReferenceOptimizer):
    """The reference's AdamW: `w -= lr * (m / (sqrt(v) + eps) + wd * w)`."""

    def update_step(self, gradient, variable, learning_rate):
        lr = ops.cast(learning_rate, variable.dtype)
        index = self._get_variable_index(variable)
        if self.decay_rate > 0 and not self._excluded[index]:
            # Decay from the old value first; the Adam step does not read w,
            # so this equals the reference's single update.
            self.assign_sub(variable, lr * self.decay_rate * variable)
        # TensorFlow's fused Adam kernel (one pass over w, m, v instead of
        # about ten); beta powers of 0 turn its bias correction off.
        m, v = self._m[index], self._v[index]
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle, m=m.value.handle, v=v.value.handle, beta1_power=0.0,
            beta2_power=0.0, lr=lr, beta1=self.beta_1, beta2=self.beta_2,
            epsilon=self.epsilon, grad=ops.cast(gradient, variable.dtype))


@keras.saving.register_keras_serializable(package="albert_tf")
class Lamb(_ReferenceOptimizer):
    """LAMB (You et al. 2020) as in the reference `lamb_optimizer.py`.

    The AdamW direction `u` is scaled per variable by the trust ratio
    `||w|| / ||u||` (1 when either norm is 0, and for excluded variables).
    """

    def update_step(self, gradient, variable, learning_rate):
        lr = ops.cast(learning_rate, variable.dtype)
        update = self._adam_direction(gradient, variable)
        if not self._excluded[self._get_variable_index(variable)]:
            w_norm = ops.sqrt(ops.sum(ops.square(variable)))
            u_norm = ops.sqrt(ops.sum(ops.square(update)))
            ratio = ops.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, 1.0)
            update = update * ratio
        self.assign_sub(variable, lr * update)


def create_optimizer(name, learning_rate, train_steps, warmup_steps, weight_decay=0.01,
                     clip_norm=1.0, accumulation_steps=1):
    """The optimizer and schedule of a run, as the reference builds them.

    `train_steps` and `warmup_steps` count optimizer updates, each made of
    `accumulation_steps` micro-batches.
    """
    schedule = WarmupLinearDecay(learning_rate, train_steps, warmup_steps, accumulation_steps)
    classes = {"adamw": AdamWeightDecay, "lamb": Lamb}
    if name not in classes:
        raise ValueError(f"unknown optimizer {name!r}; choose one of {sorted(classes)}")
    return classes[name](
        learning_rate=schedule, weight_decay=weight_decay, global_clipnorm=clip_norm,
        gradient_accumulation_steps=accumulation_steps if accumulation_steps > 1 else None)
