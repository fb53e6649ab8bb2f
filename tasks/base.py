"""What every task shares: its examples and its fine-tuning recipe."""

import abc
import dataclasses
import os

from albert_tf.config import read_json

RECIPES_FILE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "configs",
                            "finetune_recipes.json")


@dataclasses.dataclass(frozen=True)
class Example:
    """One example of a sentence or sentence-pair task.

    guid: a stable id; for test splits, the id the submission format needs.
    text_a / text_b: the sentence(s); `text_b` is None for one-sentence tasks.
    label: the label as the data set writes it (a string for classification,
        a float for regression), or None on test sets.
    """

    guid: str
    text_a: str
    text_b: str | None = None
    label: object = None


@dataclasses.dataclass(frozen=True)
class Recipe:
    """Fine-tuning hyper-parameters of one task, with where they come from."""

    learning_rate: float
    batch_size: int
    train_steps: int
    warmup_steps: int
    max_seq_length: int
    dropout: float
    classifier_dropout: float
    source: str

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


def load_recipe(task_name, path=RECIPES_FILE):
    """The recipe of `task_name` from `configs/finetune_recipes.json`."""
    table = read_json(path)
    recipes = table["recipes"]
    if task_name not in recipes:
        raise ValueError(f"{path}: no recipe for task {task_name!r}; have {sorted(recipes)}")
    values = dict(recipes[task_name])
    values.setdefault("source", table.get("source", ""))
    fields = {f.name for f in dataclasses.fields(Recipe)}
    unknown = sorted(set(values) - fields)
    if unknown:
        raise ValueError(f"{path}: recipe {task_name!r} has unknown field(s) {unknown}")
    try:
        return Recipe(**values)
    except TypeError as e:
        raise ValueError(f"{path}: recipe {task_name!r}: {e}") from None


class Task(abc.ABC):
    """What a task supplies to the generic fine-tuning engine.

    Subclasses set `name`, `eval_splits`, `test_splits` and implement the
    methods below; `albert_tf.training.finetuning.run` calls them in order:
    read_examples -> featurize -> build_model -> (train) -> evaluate /
    write_predictions. Training reads the split `train_split`.
    """

    name = None
    train_split = "train"
    eval_splits = ("dev",)
    test_splits = ("test",)

    @property
    def recipe(self):
        """The default `Recipe` (configs/finetune_recipes.json)."""
        return load_recipe(self.name)

    def options(self, settings):
        """The task's validated `settings.task_options`; this task takes none."""
        if settings.task_options:
            raise ValueError(f"task {self.name!r} takes no task options, got "
                             f"{sorted(settings.task_options)}")
        return None

    def make_tokenizer(self, spm_model):
        """The host tokenizer featurization uses."""
        from albert_tf.tokenizer import HostTokenizer

        return HostTokenizer(spm_model)

    @abc.abstractmethod
    def read_examples(self, data_dir, split):
        """The examples of `split` read from `data_dir`."""

    @abc.abstractmethod
    def featurize(self, examples, tokenizer, settings, split):
        """`albert_tf.data.Features` of `examples` (labels included unless test)."""

    @abc.abstractmethod
    def build_model(self, backbone, settings):
        """The task model (a `keras.Model` with `compute_loss` and `head_config`)."""

    @abc.abstractmethod
    def evaluate(self, run, split):
        """Metrics (name -> number) of a labelled split.

        `run` (`albert_tf.training.finetuning.Run`) gives `examples(split)`,
        `features(split)`, `outputs(split)` (model outputs, cached),
        `settings` and `output_dir`.
        """

    @abc.abstractmethod
    def write_predictions(self, run, split):
        """Writes prediction files of an unlabelled split; returns their paths."""
