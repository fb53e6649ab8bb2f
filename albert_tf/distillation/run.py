"""A distillation run: a fine-tuning run whose student also learns from a teacher.

`distill(task, settings, load_teacher)` is the library entry point behind
`python -m albert_tf.distill`. It is `albert_tf.training.finetuning.run`
with a `DistillationRun`: the same data, checks, checkpoints, resumption,
evaluation and model folder, with three differences:

- the student's head is built from the teacher's head config (its label
  set, tags), and its tokenizer is the teacher's: the two see the same
  features and speak the same labels;
- what is trained is a `Distiller` around the student, on the training
  features plus the teacher's outputs (`teacher_<name>` arrays, computed
  once into `<output_dir>/teacher/<hash>/`), unless the teacher runs in
  every step (`cache_teacher=False`, or intermediate losses);
- the results hold the teacher's metrics beside the student's, and the
  model folder (`<output_dir>/model/`) is an ordinary fine-tuned one:
  export, predict and TFLite take it as any other.
"""

import dataclasses
import functools
import os

from albert_tf.checkpoints import native
from albert_tf.tokenizer.loading import load_tokenizer
from albert_tf.data.features import cache_key
from albert_tf.distillation import teacher_cache
from albert_tf.distillation.distiller import TEACHER_PREFIX, Distiller, LossWeights
from albert_tf.distillation.losses import parse_layer_map
from albert_tf.training import finetuning

TEACHER_DIR = "teacher"


def loss_weights(settings, student_layers, teacher_layers):
    """The `LossWeights` of `settings` (a `DistillSettings`), the layer map checked."""
    layer_map = ()
    if settings.hidden_weight or settings.attention_weight:
        layer_map = parse_layer_map(settings.layer_map, student_layers, teacher_layers)
    return LossWeights(hard=settings.hard_weight, soft=settings.soft_weight,
                       temperature=settings.temperature, hidden=settings.hidden_weight,
                       attention=settings.attention_weight, layer_map=layer_map)


def _block_source(name, teacher_counts):
    """The teacher variable a student variable `attention_3/query/kernel` starts
    from: the teacher's same-numbered block if it has one, else its first."""
    head, _, rest = name.partition("/")
    kind, _, number = head.rpartition("_")
    if kind in ("attention", "ffn") and number.isdigit():
        index = int(number) if int(number) < teacher_counts[kind] else 0
        return f"{kind}_{index}/{rest}"
    return name


def init_from_teacher(student, teacher):
    """Copies the teacher's weights into the student wherever the shapes fit:
    embeddings, each stored block from the teacher's block of the same
    number (else its first), pooler, task head. Returns `(copied, skipped)`
    variable names (skipped: a shape differs)."""
    counts = {"attention": len(teacher.backbone.attention_blocks),
              "ffn": len(teacher.backbone.ffn_blocks)}
    sources = {v.path: v for v in teacher.weights}
    copied, skipped = [], []
    for variable in student.weights:
        source = sources.get(_block_source(variable.path, counts))
        if source is None:
            continue
        if tuple(source.shape) == tuple(variable.shape):
            variable.assign(source.value)
            copied.append(variable.path)
        else:
            skipped.append(variable.path)
    return copied, skipped


class DistillationRun(finetuning.Run):
    """A `Run` whose trainee is a `Distiller` of its model (the student).

    load_teacher: a function returning the teacher model of the folder
    `settings.teacher`, called under the run's strategy scope.
    """

    def __init__(self, task, settings, verbose=True, load_teacher=None):
        self._load_teacher = load_teacher
        self.teacher = None
        self.init_report = None
        super().__init__(task, settings, verbose)

    @property
    def teacher_dir(self):
        return self.settings.teacher

    def make_tokenizer(self):
        # Before the run's strategy exists: the teacher's folder is read here,
        # its model built in `training_model`.
        self.head = native.read_metadata(self.teacher_dir).get("head")
        return load_tokenizer(self.teacher_dir, host=True)

    def training_model(self, model):
        self.teacher = self._load_teacher()
        self.teacher.trainable = False
        s = self.settings
        if s.init_from_teacher:
            copied, skipped = init_from_teacher(model, self.teacher)
            self.init_report = {"copied": len(copied), "skipped": skipped}
            if self._reporting():
                print(f"--init_from_teacher: {len(copied)} of {len(model.weights)} student "
                      f"variables start from the teacher's"
                      + (f" ({len(skipped)} of other shapes keep their random start)"
                         if skipped else ""), flush=True)
        weights = loss_weights(s, model.config.num_layers, self.teacher.config.num_layers)
        return Distiller(model, self.teacher, weights, online=not s.cache_teacher)

    def training_features(self):
        features = super().training_features()
        if self.trainee.online:
            return features
        names = tuple(self.model.distilled_outputs)
        s = self.settings
        key = cache_key(os.path.join(self.teacher_dir, native.WEIGHTS_FILE),
                        self.features_key(self.task.train_split), names)
        outputs = teacher_cache.teacher_outputs(
            self.teacher, self.strategy, features, names,
            os.path.join(s.output_dir, TEACHER_DIR, key), s.eval_batch_size,
            self.batch_length, verbose=self._reporting())
        return features.with_arrays({TEACHER_PREFIX + k: v for k, v in outputs.items()})

    def reference_results(self):
        """The teacher's metrics on the evaluated splits, under `teacher` (its head as
        it was trained: nothing tuned on it again)."""
        student, outputs, tuned = self.model, self._outputs, self._head_tuned
        self.model, self._outputs, self._head_tuned = self.teacher, {}, True
        try:
            return {"teacher": {split: self.task.evaluate(self.scoring(split))
                                for split in self.task.eval_splits}}
        finally:
            self.model, self._outputs, self._head_tuned = student, outputs, tuned

    def saved_settings(self):
        return self.settings.finetune_settings()

    def train(self, verbose=True):
        result = super().train(verbose)
        mix = dataclasses.asdict(self.trainee.mix)
        mix["layer_map"] = [list(pair) for pair in mix["layer_map"]]  # as JSON stores it
        result["distillation"] = {"teacher": os.path.abspath(self.teacher_dir),
                                  "teacher_outputs": "online" if self.trainee.online
                                  else "cached", **mix}
        if self.init_report is not None:
            result["init_from_teacher"] = self.init_report
        return result


def distill(task, settings, load_teacher, verbose=True):
    """Distils the teacher `load_teacher()` gives into the student `settings`
    describe (a `DistillSettings`); returns the results: `finetuning.run`'s,
    with `teacher` (its metrics) and `train.distillation` (how it was done)."""
    return finetuning.run(task, settings, verbose,
                          functools.partial(DistillationRun, load_teacher=load_teacher))
