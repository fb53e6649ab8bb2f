"""What every task shares: its examples and its fine-tuning recipe."""

import abc
import copy
import dataclasses
import os

from albert_tf.config import CONFIGS_DIR
from albert_tf.io_utils import read_json

# The words of metric names for which lower is better.
LOWER_IS_BETTER = {"loss", "mse", "mae", "rmse", "error", "perplexity"}
RECIPES_FILE = os.path.join(CONFIGS_DIR, "finetune_recipes.json")


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


# The fields the from-scratch recipe sets (the task's own recipe keeps the others).
SCRATCH_FIELDS = ("learning_rate", "train_steps", "warmup_steps", "dropout")


def load_scratch_recipe(recipe, path=RECIPES_FILE):
    """`recipe` (a task's `Recipe`) for a model trained from random weights:
    the `from_scratch` values of `configs/finetune_recipes.json` in place of
    its `SCRATCH_FIELDS`, with the reasoning as its source."""
    values = read_json(path)["from_scratch"]
    return recipe.replace(**{name: values[name] for name in SCRATCH_FIELDS},
                          source=values["source"])


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


def task_options(task_name, options_class, values):
    """`values` (a run's `task_options`) as an `options_class` instance, validated:
    None for a task without options; an unknown or bad option raises ValueError
    naming it."""
    if options_class is None:
        if values:
            raise ValueError(f"task {task_name!r} takes no task options, got {sorted(values)}")
        return None
    known = options_class.field_names()
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ValueError(f"unknown option for task {task_name!r} in {unknown}; known: "
                         f"{', '.join(known)}")
    return options_class.from_dict(values)


class Recipes:
    """A task's recipes by its `name`: a registered `Task` and a `tasks.Declaration`
    (a built-in task before its module is imported) read them alike."""

    @property
    def recipe(self):
        """The default `Recipe` (configs/finetune_recipes.json)."""
        return load_recipe(self.name)

    @property
    def scratch_recipe(self):
        """The `Recipe` of a run from random weights (the `from_scratch` block)."""
        return load_scratch_recipe(self.recipe)


class Task(Recipes, abc.ABC):
    """A task type's plug point: everything task-specific, for the generic layers.

    Subclasses set `name`, `eval_splits`, `test_splits` (and `options_class`
    if they take options) and implement the methods below.
    `albert_tf.training.finetuning.run` calls them in order: read_examples ->
    featurize -> build_model -> (train) -> evaluate / write_predictions;
    exporting calls `serving_module`, whose `serving_default` outputs are
    what `albert_tf.predict` prints. Training reads the split `train_split`.
    """

    name = None
    train_split = "train"
    eval_splits = ("dev",)
    test_splits = ("test",)
    # Test splits that carry labels (RACE's, C3's): with --do_predict they are
    # scored as well as predicted. A test split is read only when a run predicts.
    scored_test_splits = ()
    # An `albert_tf.settings.Settings` class of the task's own options, or None.
    options_class = None
    # A `Settings` class of the options its export takes (the export command's
    # flags, `ExportSettings.task_options`; e.g. SQuAD v2.0's `null_threshold`), or None.
    export_options_class = None
    # The package extras (`albert_tf.extras.EXTRAS`) its evaluation needs.
    extras = ()
    # Where `albert-tf download --dataset=NAME` fetches the task's data (an
    # `albert_tf.datasets.DataSource`), or None (no public data set).
    data_source = None
    # The metric that ranks steps and runs (--keep_best, early stopping, seeds,
    # search): a key of what `evaluate` returns for the first of `eval_splits`.
    primary_metric = None

    def primary_metric_for(self, options):
        """The primary metric under the task's options (`self.options(settings)`):
        `primary_metric` unless the options change what `evaluate` reports."""
        return self.primary_metric

    def greater_is_better(self, metric_name):
        """Whether a higher `metric_name` is better: accuracy, F1, correlations yes;
        losses and errors (`mse`, `baseline_mse`, `dev/loss`) no."""
        words = metric_name.rsplit("/", 1)[-1].lower().split("_")
        return not set(words) & LOWER_IS_BETTER

    # On a task bound to a run (`bind`): its validated options and what the task
    # computed from the run's files (e.g. label statistics), kept for that run only.
    task_options = None
    run_cache = None
    _bound_to = None

    def bind(self, settings):
        """This task for one run of `settings`: a copy whose `task_options` are the
        options validated once (`options`), and whose `run_cache` holds what the task
        derives from the run's files. The registered task stays unbound."""
        bound = copy.copy(self)
        bound.task_options = self._validated_options(settings)
        bound.run_cache = {}
        bound._bound_to = dict(settings.task_options)
        return bound

    def options(self, settings):
        """The task's validated `settings.task_options` (an `options_class` instance);
        on a task bound to those options, the ones validated at binding.

        What only a run or a loaded model folder calls (`evaluate`,
        `write_predictions`, `serving_module`: on their bound task) reads
        `self.task_options`; what may be called on the registered task with
        settings (`featurize`, `build_model`, a task's decoding) asks this."""
        if self._bound_to is not None and settings.task_options == self._bound_to:
            return self.task_options
        return self._validated_options(settings)

    def _validated_options(self, settings):
        return task_options(self.name, self.options_class, settings.task_options)

    @abc.abstractmethod
    def read_examples(self, data_dir, split, options=None):
        """The examples of `split` read from `data_dir`.

        options: the task's validated options (`self.options(settings)`, None
        for a task without any), for tasks whose files the options name.
        """

    @abc.abstractmethod
    def featurize(self, examples, tokenizer, settings, split):
        """`albert_tf.data.Features` of `examples` (labels included unless test);
        `tokenizer` is a host tokenizer (`albert_tf.tokenizer.base`)."""

    @abc.abstractmethod
    def build_model(self, backbone, settings, head=None):
        """The task model (a `keras.Model` with `compute_loss` and `head_config`).

        head: None for a new run; when a fine-tuned model folder is loaded
        back (`tasks.finetuned`), the `head_config()` saved in it, so that a
        head built from the training data (a label set) is rebuilt as it was
        trained, without the training file.
        """

    @abc.abstractmethod
    def evaluate(self, run, split):
        """Metrics (name -> number) of a labelled split.

        `run` (`albert_tf.training.finetuning.Run`) gives `examples(split)`,
        `features(split)`, `outputs(split)` (model outputs, cached),
        `settings` and `output_dir`.
        """

    def model_changed(self, run):
        """Forgets what the task derived from the run's model outputs (training
        changed its weights since); nothing by default."""

    @abc.abstractmethod
    def write_predictions(self, run, split):
        """Writes prediction files of an unlabelled split; returns their paths."""

    def kfold_files(self, options, data_dir, k, folder):
        """`--kfold=k`: writes the k folds of the training file into `folder` and
        returns their `albert_tf.training.seeds_folds.Fold`s. Only the tasks on the
        user's own files split theirs (`tasks.user_files.write_folds`)."""
        raise ValueError(f"--kfold is for the tasks on your own files (text_classification, "
                         f"text_regression, token_classification, multiple_choice); task "
                         f"{self.name!r} has its own splits")

    def serving_module(self, model, tokenizer, settings, model_dir, export_options):
        """`(module, info)`: the raw-text serving module of a fine-tuned model.

        model: the fine-tuned task model; tokenizer: the in-graph tokenizer;
        model_dir: the model folder (for files saved beside it);
        export_options: the task's validated export options
        (`self.export_options(...)`: an `export_options_class` instance, or
        None for a task without any).
        Returns an `albert_tf.export.base.ServingModule` and the JSON-able
        description stored with the export; its `inputs` lists the raw-text
        inputs by name.
        """
        raise ValueError(f"task {self.name!r} has no serving export")

    def export_options(self, given):
        """The task's validated export options (an `export_options_class` instance,
        or None for a task without any) from `given`, a dict whose None values
        mean "not given"; an option the task does not take is refused, named."""
        given = {k: v for k, v in (given or {}).items() if v is not None}
        known = self.export_options_class.field_names() if self.export_options_class else ()
        self.check_export_options(given, known)
        if self.export_options_class is None:
            return None
        return self.export_options_class.from_dict(given)

    def check_export_options(self, export_options, known=()):
        """Rejects export options this task does not take, naming them
        (`export_options`: a dict of those given, or None)."""
        unknown = sorted(set(export_options or ()) - set(known))
        if unknown:
            raise ValueError(f"task {self.name!r} takes no export option(s) "
                             f"{', '.join(unknown)}" + (f"; it takes {', '.join(known)}"
                                                        if known else ""))
