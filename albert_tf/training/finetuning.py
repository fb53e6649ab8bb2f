"""A fine-tuning run: data, model, training, evaluation, predictions, export.

`run(task, settings)` is the library entry point behind
`python -m albert_tf.finetune`; it reads no flags. The task (see
`tasks.base.Task`) supplies reading, featurization, the model head, metrics
and prediction files; this module supplies everything generic: the `Run`
(checks, data, training, outputs) and `run`'s order of steps. Data flows one
way: the run hands the task what it scores (`Run.scoring`, a
`tasks.base.Scoring` of plain data) and takes back metrics and head updates;
the task never holds the run. The run's model
is made and saved by `run_model`, its evaluations around training (while
training, the best step) are `best_model`'s, its results printed and
written by `results`.
"""

import dataclasses
import os

from albert_tf import lora
from albert_tf.data import bucket_lengths, padded_length
from albert_tf.data.features import cache_key, cached
from albert_tf.progress import Heartbeat, Progress
from albert_tf.training import best_model, collapse, engine, eval_extras, run_card, tracking
from albert_tf.training.callbacks import update_step
from albert_tf.training import settings as settings_lib
from albert_tf.training.results import precision_note, write_results
from albert_tf.training.run_folder import (CHECKPOINT_DIR, CHECKPOINT_RESULTS_FILE, FEATURES_DIR,
                                           HISTORY_FILE, MODEL_DIR, RESULTS_FILE, SETTINGS_FILE,
                                           has_progress)
from albert_tf.training.run_checks import (bind_task, check_inputs,  # noqa: F401 (public)
                                           check_run, splits_to_read)
from albert_tf.training.run_model import (build_model, model_config,  # noqa: F401 (public)
                                          read_init_checkpoint, run_tokenizer, save_finetuned)
from albert_tf.training.devices import is_chief
from albert_tf.training.setup import start_run
from albert_tf.training.task_data import Scoring, SplitData


class Run:
    """The state of one run: its setup (strategy, precision), tokenizer, model, batch lengths.

    Everything the user can get wrong is checked before the run starts (and
    before its settings are saved), all problems in one message: the
    vocabulary, the model and its positions, and every split the run will read.

    `model` is the task model that is evaluated and saved; `trainee` the
    model that is trained, the same one here (a subclass may train it
    inside another, e.g. `albert_tf.distillation.run.DistillationRun`).
    """

    # A saved head config the task model is built with (see `Task.build_model`).
    head = None
    # Whether a new run without --init_checkpoint warns that its model starts from
    # random weights (`build_model`): a forgotten checkpoint. A run that trains
    # from scratch on purpose (`--demo`) says so itself.
    warns_from_scratch = True

    def __init__(self, task, settings, verbose=True):
        task = bind_task(task, settings)
        if settings.metrics_fn:  # a mistyped module or function: before any work
            eval_extras.load_metrics_fn(settings.metrics_fn)
        self.task, self.settings, self.verbose = task, settings, verbose
        self._examples, self._features, self._outputs = {}, {}, {}
        self._head_tuned = False  # (the task's head update applied to the model as it is)
        self.tokenizer = self.make_tokenizer()
        checkpoint = read_init_checkpoint(settings)
        config = check_run(task, settings, self.tokenizer.vocabulary_size, checkpoint,
                           self.examples)
        resumed = has_progress(settings.output_dir)
        # After a collapse (--collapse_restarts): the attempt's own seed and learning rate.
        self.attempts = collapse.Attempts(settings, is_chief(settings.strategy))
        self.attempts.archive()  # (what a run killed while restarting left)
        varied = self.attempts.varied()
        self._own = {name: getattr(settings, name) for name in varied}
        self.setup = start_run(settings, SETTINGS_FILE,
                               config.replace(dropout=settings.dropout,
                                              attention_dropout=settings.dropout), varied)
        self.settings = settings = self.setup.settings
        self._collapse = (None, None)  # (step, the task's Collapse) of the latest evaluation
        self.watch = collapse.CollapseWatch(
            self.attempts, None, self.collapse_at,
            (lambda line: print(line, flush=True)) if self.setup.chief else None)
        if verbose and self.setup.chief:
            print(f"device: {self.setup.describe()}", flush=True)
        self.settings = settings = self._schedule()
        self.strategy = self.setup.strategy
        with self.strategy.scope():
            self.model = build_model(task, settings, self.setup.policy, config, checkpoint,
                                     self.head,
                                     warn_random=self.warns_from_scratch and not resumed)
            self.trainee = self.training_model(self.model)
        self.setup.compile(self.trainee)
        if settings.lora_rank and verbose and self.setup.chief:
            print(lora.size_report(self.model, settings.lora_rank), flush=True)
        # XLA compiles once per shape: pad to a few bucket lengths, not to multiples
        # of 8. Training's and evaluation's XLA are chosen apart (`RunSetup`).
        self.batch_length = self._batch_length(self.setup.jit)
        self.eval_batch_length = self._batch_length(self.setup.inference_jit)
        # TensorBoard and MLflow (--report_to), on the chief.
        self.report = tracking.RunReport(settings, self.setup.chief)

    def _batch_length(self, jit):
        """`lengths -> the batch's padded length`, for a step compiled with XLA or not."""
        s = self.settings
        buckets = ([s.max_seq_length] if s.fixed_padding else
                   bucket_lengths(s.max_seq_length) if jit else None)
        return lambda lengths: padded_length(lengths, s.max_seq_length, buckets=buckets)

    def _schedule(self):
        """The settings with the run's length in updates (`settings.scheduled`: from
        --num_epochs, counted in the training Features, and --warmup_proportion),
        saved once known; the line that says it."""
        s = self.settings
        if not s.do_train or (s.num_epochs is None and s.warmup_proportion is None):
            return s
        examples = (len(self.features(self.task.train_split)) if s.num_epochs is not None
                    else None)
        scheduled = settings_lib.scheduled(s, examples)
        if scheduled != s:
            self.setup = dataclasses.replace(self.setup, settings=scheduled)
            if self.setup.chief:  # (the run's own seed and rate, not an attempt's)
                scheduled.replace(**self._own).save(os.path.join(s.output_dir, SETTINGS_FILE))
        if s.num_epochs is not None and self._reporting():
            print(f"train: {s.num_epochs} epochs of {examples:,} examples = "
                  f"{scheduled.train_steps:,} updates of {s.batch_size}", flush=True)
        return scheduled

    def make_tokenizer(self):
        """The run's host tokenizer."""
        return run_tokenizer(self.settings)

    def training_model(self, model):
        """The model `train` fits (under the strategy's scope): `model` itself."""
        return model

    def training_features(self):
        """What `train` fits on: the training split's features."""
        return self.features(self.task.train_split)

    def reference_results(self):
        """Results to report beside the model's (none here)."""
        return {}

    def saved_settings(self):
        """The settings stored with the model folder."""
        return self.settings

    @property
    def output_dir(self):
        return self.settings.output_dir

    def examples(self, split):
        """A split's examples: the first --max_train_samples / --max_eval_samples
        of the training and dev splits where they are given."""
        if split not in self._examples:
            examples = self.task.read(self.settings.data_dir, split, self.task.task_options)
            s = self.settings
            limit = (s.max_train_samples if split == self.task.train_split else
                     s.max_eval_samples if split in self.task.eval_splits else None)
            self._examples[split] = examples if limit is None else list(examples)[:limit]
        return self._examples[split]

    def features_key(self, split):
        """The hash of what a split's features depend on (files, settings, tokenizer)."""
        s = self.settings
        return cache_key(self.task.name, split, s.data_dir, s.max_seq_length,
                         self.tokenizer.fingerprint(), sorted(s.task_options.items()),
                         len(self.examples(split)))

    def features(self, split):
        """`Features` of a split, featurized once and cached on disk."""
        if split not in self._features:
            path = os.path.join(self.settings.output_dir, FEATURES_DIR,
                                f"{split}-{self.features_key(split)}")
            self._features[split] = cached(
                path, lambda: self._featurize(self.examples(split), split))
        return self._features[split]

    def _featurize(self, examples, split):
        with Progress(len(examples), f"featurize {split}", "examples", interval=1e9,
                      enabled=self._reporting()) as progress:
            # (a task featurizes a split in one call: a line every 30 s shows it going)
            with Heartbeat(f"featurize {split}", f"{len(examples):,} examples",
                           enabled=self._reporting()):
                features = self.task.featurize(examples, self.tokenizer, self.settings, split)
            progress.update(len(examples))
        return features

    def _reporting(self):
        return self.verbose and self.setup.chief

    def model_changed(self):
        """Forgets the outputs of the model's earlier weights, and what the task
        tuned on them: training or a restore changed them."""
        self._outputs.clear()
        self._head_tuned = False

    def split_data(self, split):
        """What the task reads of one split (`tasks.base.SplitData`); a split without
        examples has no features and no outputs (None)."""
        examples = self.examples(split)
        if not len(examples):
            return SplitData(split, examples, None, None)
        return SplitData(split, examples, self.features(split), self.outputs(split))

    def scoring(self, split):
        """What the task scores or predicts `split` from (`tasks.base.Scoring`), once
        the task's head update for the model as it is now is applied (`tune_head`)."""
        helpers = {name: self.split_data(name) for name in self.task.helper_splits()}
        if not self._head_tuned:
            update = self.task.tune_head(helpers, self.model.head_config())
            if update:
                self.model.update_head(**update)
            self._head_tuned = True
        return Scoring(self.split_data(split), helpers, self.model.head_config(),
                       self.output_dir, self.tokenizer, getattr(self.model, "decode", None),
                       update_step(self.trainee))

    def evaluate(self):
        """split -> the task's metrics of the model as it is now, for every dev split."""
        self.model_changed()
        results = {split: self.scored(split) for split in self.task.eval_splits}
        self._collapse = (update_step(self.trainee), self.collapse(results))
        self._outputs.clear()  # those outputs are of this step only
        return results

    def scored(self, split):
        """The task's metrics of `split`, with the evaluation `loss` and the
        user's metrics (`--metrics_fn`) beside them (`eval_extras`)."""
        metrics = self.task.evaluate(self.scoring(split))
        features = self.features(split) if len(self.examples(split)) else None
        if features is None:
            return metrics
        labels = {k: features.arrays[k] for k in features.label_keys if k in features.arrays}
        outputs = self.outputs(split)
        loss = eval_extras.split_loss(self.model, labels, outputs)
        if loss is not None and "loss" not in metrics:
            metrics = {**metrics, "loss": loss}
        if self.settings.metrics_fn:
            fn = eval_extras.load_metrics_fn(self.settings.metrics_fn)
            metrics = {**metrics, **eval_extras.user_metrics(
                fn, self.settings.metrics_fn, outputs, labels, metrics)}
        return metrics

    def collapse(self, results):
        """The task's `Collapse` of the model as it is now on the first dev split,
        whose `results` are given, or None."""
        split = self.task.eval_splits[0]
        return self.task.collapse(self.scoring(split), results[split])

    def collapse_at(self, step):
        """The collapse of the evaluation at `step`: the latest's, else made again."""
        if self._collapse[0] != step:
            self.evaluate()
        return self._collapse[1]

    def outputs(self, split):
        """The model's outputs on every example of a split (cached until trained again)."""
        if split not in self._outputs:
            features = self.features(split)
            self._outputs[split] = engine.predict(
                self.model, self.strategy, features, self.settings.eval_batch_size,
                self.eval_batch_length, Progress(len(features), f"predict {split}", "examples",
                                                 enabled=self._reporting()),
                jit=self.setup.inference_jit)
        return self._outputs[split]

    def restore_checkpoint(self):
        """Without training (`--do_train=false`): the run's newest checkpoint
        restored, if it has one; returns its update step, or None."""
        directory = os.path.join(self.output_dir, CHECKPOINT_DIR)
        if not has_progress(self.output_dir) or not os.path.isdir(directory):
            return None
        manager = engine.checkpoint_manager(self.trainee, self.strategy, directory)
        step = engine.restore_latest(manager, directory)
        self._outputs.clear()
        if self._reporting():
            total = self.settings.train_steps
            print(f"using the checkpoint of step {step} of {total}" + (
                " (the run stopped there: --output_dir alone resumes its training)"
                if step < total else ""), flush=True)
        return step

    def train(self, verbose=True):
        features = self.training_features()
        make_dataset = engine.planned_dataset(self.strategy, features, self.settings,
                                              self.batch_length)
        result = engine.train(self.trainee, self.strategy, make_dataset, self.settings,
                              self.settings.output_dir, verbose, self.setup.worker,
                              best_model.evaluator(self, len(features)),
                              only_trained=bool(self.settings.lora_rank),
                              tensorboard=self.report.summary_dir is not None,
                              report=self.report.scalars)
        self.model_changed()
        trained = result["step"] * self.settings.batch_size
        return {**result, "examples": trained, "train_set_examples": len(features),
                "epochs": round(trained / max(len(features), 1), 2)}


def run(task, settings, verbose=True, make_run=Run):
    """Fine-tunes, evaluates and predicts as `settings` say; returns the results.

    Writes into `settings.output_dir`: `settings.json` (with the precision
    and XLA choice made), `checkpoints/`, `tensorboard/`, `eval_results.json`,
    prediction files, and `model/` (the fine-tuned model in albert_tf's
    format, with its vocabulary); reports to MLflow as `--report_to` says
    (`tracking`), its MLflow run ended FINISHED, KILLED (interrupted) or FAILED.

    make_run: `Run` or a subclass, called as `make_run(task, settings, verbose)`.
    """
    tracking.require(settings)
    while True:
        current = make_run(task, settings, verbose)
        try:
            results = _run(current)
        except collapse.Collapsed:
            current.attempts.restart()  # from the initial weights, with the next seed
            continue
        except BaseException as e:
            current.report.end(e)
            raise
        current.report.end()
        return results


def _run(current):
    """`run`'s steps on the `Run` made."""
    settings, setup, task = current.settings, current.setup, current.task  # the bound task
    verbose = current.verbose
    results = {"task": task.name, "precision": setup.policy, "xla": setup.jit,
               "evaluation_xla": setup.inference_jit, "replicas": setup.replicas}
    if precision_note(setup.policy):
        results["precision_note"] = precision_note(setup.policy)
    if settings.do_eval:
        results.update(current.reference_results())
    stopped_at = None  # the step of a stopped run's checkpoint evaluated without training
    if settings.do_train:
        results["train"] = current.train(verbose)
        if settings.keep_best:
            results["best"] = best_model.restore_best(current)
    else:
        step = current.restore_checkpoint()
        if step is not None and step < settings.train_steps:
            stopped_at = results["checkpoint_step"] = step
    if settings.do_eval:
        for split in task.eval_splits:
            results[split] = current.scored(split)
        if settings.do_train:  # (judged at the end; raises `Collapsed` to restart)
            step = update_step(current.trainee)
            found = current.watch.judge(step, current.collapse(results), at_end=True)
            if found is not None:
                results["collapsed"] = {"step": step, **found.to_dict()}
        best_model.write_final(current, {split: results[split] for split in task.eval_splits})
    if settings.collapse_restarts or any("collapsed" in a for a in current.attempts.entries):
        results["attempts"] = current.attempts.results()
    if settings.do_predict:
        results["predictions"] = {split: task.write_predictions(current.scoring(split))
                                  for split in task.test_splits}
        for split in task.scored_test_splits:
            results[split] = task.evaluate(current.scoring(split))
    if setup.chief and stopped_at is not None:
        # Not the run's results nor its model: the run is not finished.
        write_results(os.path.join(settings.output_dir,
                                 CHECKPOINT_RESULTS_FILE.format(step=stopped_at)), results)
    elif setup.chief:
        write_results(os.path.join(settings.output_dir, RESULTS_FILE), results)
        save_finetuned(current.model, task, current.saved_settings(),
                       os.path.join(settings.output_dir, MODEL_DIR), current.tokenizer)
        run_card.write(current, os.path.join(settings.output_dir, MODEL_DIR), results)
        current.report.final(update_step(current.trainee), results, {
            os.path.join(settings.output_dir, name): folder for name, folder in (
                (RESULTS_FILE, None), (HISTORY_FILE, None), (MODEL_DIR, MODEL_DIR))})
    return results
