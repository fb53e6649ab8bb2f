"""What every task shares: its declaration, its recipe, what the run hands it, the base class."""

import abc
import copy
import dataclasses
import os

from albert_tf.config import CONFIGS_DIR
from albert_tf.io_utils import read_json
from albert_tf.training.settings import FinetuneSettings
from albert_tf.training.task_data import (Collapse, Scoring,  # noqa: F401 (what tasks read)
                                          SplitData)

# The words of metric names for which lower is better.
LOWER_IS_BETTER = {"loss", "mse", "mae", "rmse", "error", "perplexity"}
SCRATCH_RECIPE_FILE = os.path.join(CONFIGS_DIR, "from_scratch_recipe.json")
RECIPES_FILE = "recipes.json"  # in a task type's folder


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


def _recipe_fields():
    """`(name, type)` of the fine-tuning settings a recipe sets (their role "recipe")."""
    types = {f.name: f.type for f in dataclasses.fields(FinetuneSettings)}
    return [(name, types[name]) for name in FinetuneSettings.fields_with("recipe")]


Recipe = dataclasses.make_dataclass(
    "Recipe", [*_recipe_fields(), ("source", str)], frozen=True,
    namespace={"__doc__": "Fine-tuning hyper-parameters of one task (the settings of role "
                          "`recipe`), with where they come from.",
               "__module__": __name__,
               "replace": lambda self, **changes: dataclasses.replace(self, **changes)})
# The fields the from-scratch recipe sets (the task's own recipe keeps the others).
SCRATCH_FIELDS = FinetuneSettings.fields_with("scratch")


def load_scratch_recipe(recipe, path=SCRATCH_RECIPE_FILE):
    """`recipe` (a task's `Recipe`) for a model trained from random weights:
    `configs/from_scratch_recipe.json`'s values in place of its
    `SCRATCH_FIELDS`, with the reasoning as its source."""
    table = read_json(path)
    return recipe.replace(**{name: table["recipe"][name] for name in SCRATCH_FIELDS},
                          source=table["source"])


def load_recipe(task_name, path):
    """The recipe of `task_name` from a task type's `recipes.json` (`path`):
    `{"source": ..., "recipes": {name: {field: value, ["source": ...]}}}`."""
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


@dataclasses.dataclass(frozen=True)
class Declared:
    """A task as its type's folder declares it (the folder's light `__init__`),
    before the module that implements it is imported: what a command needs to
    make its flags, resolve its recipe and check its settings without TensorFlow.

    name: the task's name (`--task`).
    module: the module that registers the task (`tasks.register`), imported
        when the task is first looked up.
    options_class: a `Settings` class of the task's own options (its fields are
        `finetune` flags), or None.
    export_options_class: a `Settings` class of what its export takes (the
        `export` command's flags), or None.
    recipes: the folder's `recipes.json` (see `load_recipe`), or a `Recipe`.
    data_folder: what `--data_dir` holds for the task (its error when missing),
        or None: the task reads its own file flags (`--train_file`, ...).
    data_source: where `albert-tf download --dataset=NAME` fetches the task's
        data (an `albert_tf.datasets.DataSource`), or None (no public data set).
    """

    name: str
    module: str
    options_class: type | None = None
    export_options_class: type | None = None
    recipes: object = None
    data_folder: str | None = None
    data_source: object = None

    @property
    def recipe(self):
        """The default `Recipe`."""
        if isinstance(self.recipes, Recipe):
            return self.recipes
        return load_recipe(self.name, self.recipes)

    @property
    def scratch_recipe(self):
        """The `Recipe` of a run from random weights."""
        return load_scratch_recipe(self.recipe)

    def options(self, settings):
        """The task's validated options of `settings` (`settings.task_options`)."""
        return task_options(self.name, self.options_class, settings.task_options)


def recipes_file(package_file):
    """The `recipes.json` beside a task type's `__init__.py` (`__file__`)."""
    return os.path.join(os.path.dirname(os.path.abspath(package_file)), RECIPES_FILE)


class Task(abc.ABC):
    """A task type's plug point: everything task-specific, for the generic layers.

    A task is made from its `Declared` form (`declared`: its name, options,
    export options, recipes); subclasses set `eval_splits`, `test_splits`,
    `primary_metric` and implement the methods below.
    `albert_tf.training.finetuning.run` calls them in order: `read` ->
    `featurize` -> `build_model` -> (train) -> `tune_head` -> `evaluate` /
    `write_predictions`, handing each what it needs (a `Scoring`); the task
    never holds the run. Exporting calls `serving_module`, whose
    `serving_default` outputs are what `albert-tf predict` prints. Training
    reads the split `train_split`.
    """

    train_split = "train"
    eval_splits = ("dev",)
    test_splits = ("test",)
    # Test splits that carry labels (RACE's, C3's): with --do_predict they are
    # scored as well as predicted. A test split is read only when a run predicts.
    scored_test_splits = ()
    # The package extras (`albert_tf.extras.EXTRAS`) its evaluation needs.
    extras = ()
    # The metric that ranks steps and runs (--keep_best, early stopping, seeds,
    # search): a key of what `evaluate` returns for the first of `eval_splits`.
    primary_metric = None
    # What a model card says of it (`albert_tf.model_card`): Hugging Face's pipeline
    # tag ("text-classification", ...) and the language of its data (an ISO 639-1
    # code), None where it is the user's.
    pipeline_tag = None
    language = None

    def __init__(self, declared):
        self.declared = declared

    # What the declaration says, under the names the generic layers read.
    name = property(lambda self: self.declared.name)
    options_class = property(lambda self: self.declared.options_class)
    export_options_class = property(lambda self: self.declared.export_options_class)
    recipe = property(lambda self: self.declared.recipe)
    scratch_recipe = property(lambda self: self.declared.scratch_recipe)

    def primary_metric_for(self, options):
        """The primary metric under the task's options (`self.options(settings)`):
        `primary_metric` unless the options change what `evaluate` reports."""
        return self.primary_metric

    def greater_is_better(self, metric_name):
        """Whether a higher `metric_name` is better: accuracy, F1, correlations yes;
        losses and errors (`mse`, `baseline_mse`, `dev/loss`) no."""
        words = metric_name.rsplit("/", 1)[-1].lower().split("_")
        return not set(words) & LOWER_IS_BETTER

    # On a task bound to a run (`bind`): its settings, their validated options and
    # what the task computed from the run's files (e.g. label statistics), kept
    # for that run only.
    settings = None
    task_options = None
    run_cache = None

    def bind(self, settings):
        """This task for one run of `settings`: a copy that keeps the settings, whose
        `task_options` are the options validated once (`options`), and whose
        `run_cache` holds what the task derives from the run's files. The
        registered task stays unbound."""
        bound = copy.copy(self)
        bound.settings = settings
        bound.task_options = self.declared.options(settings)
        bound.run_cache = {}
        return bound

    def options(self, settings):
        """The task's validated `settings.task_options` (an `options_class` instance,
        None for a task without options); on a task bound to those settings, the
        ones validated at binding."""
        if self.settings is not None and settings.task_options == self.settings.task_options:
            return self.task_options
        return self.declared.options(settings)

    def read(self, data_dir, split, options=None):
        """The examples of `split`: `read_examples`, once `--data_dir` is known to be
        given where the task reads its data from one (`declared.data_folder`)."""
        if self.declared.data_folder and not data_dir:
            raise ValueError(f"--data_dir is required for task {self.name!r} "
                             f"({self.declared.data_folder})")
        return self.read_examples(data_dir, split, options)

    @abc.abstractmethod
    def read_examples(self, data_dir, split, options=None):
        """The examples of `split` read from `data_dir` (called through `read`).

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

    def helper_splits(self):
        """The splits besides the scored one that `tune_head` and `evaluate` read
        (`Scoring.helpers`), e.g. training rows held out to choose a threshold."""
        return ()

    def tune_head(self, helpers, head):
        """`{head field: value}` to set on the model's head once it is trained (a
        decision threshold chosen on `helpers`, the `helper_splits`' `SplitData`),
        or None; `head` is the model's head config. The run applies it
        (`model.update_head`), so the saved model folder carries it."""
        return None

    @abc.abstractmethod
    def evaluate(self, scoring):
        """Metrics (name -> number) of a labelled split (`scoring`: a `Scoring`)."""

    def collapse(self, scoring, results):
        """A `Collapse` when the model's predictions on the split scored (`scoring`,
        with `results`, what `evaluate` returned for it) are degenerate: every one
        the same class, one constant score, no entity; else None. Only the task
        knows what its outputs predict; the default: it cannot tell (None)."""
        return None

    @staticmethod
    def collapse_of(split, what, results, *metrics):
        """The `Collapse` of the finding `what` (None: no collapse) on `split`, with
        `metrics` of `results` and their `baseline_*` as its figures."""
        if what is None:
            return None
        names = [n for m in metrics for n in (m, f"baseline_{m}") if n in results]
        return Collapse(split, what, {n: results[n] for n in names})

    @abc.abstractmethod
    def write_predictions(self, scoring):
        """Writes the prediction files of an unlabelled split (`scoring`: a
        `Scoring`) into `scoring.output_dir`; returns their paths."""

    def data_files(self, data_dir, options):
        """The files (or folders) the task reads, which a model card lists with their
        hashes: `data_dir`, and the files its options name (`train_file`, ...)."""
        files = [data_dir] if data_dir else []
        if options is not None:
            files += [getattr(options, name) for name in options.field_names()
                      if name.endswith("_file") and getattr(options, name)]
        return files

    def model_files(self, settings):
        """Files of the run's data that the model folder keeps a copy of, by the
        same name (e.g. CLUE's labels.json): what `serving_module` reads beside
        the model (its `model_dir`) still holds when the data is gone."""
        return []

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
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise ValueError(f"task {self.name!r} takes no export option(s) "
                             f"{', '.join(unknown)}" + (f"; it takes {', '.join(known)}"
                                                        if known else ""))
        if self.export_options_class is None:
            return None
        return self.export_options_class.from_dict(given)
