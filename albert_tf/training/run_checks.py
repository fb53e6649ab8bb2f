"""The checks a fine-tuning run makes before it starts (`finetuning.Run`), and the
same checks without a run (`check_inputs`: a search checks what its trials read)."""

from albert_tf import extras
from albert_tf.training.run_model import model_config, read_init_checkpoint, run_tokenizer


def splits_to_read(task, settings):
    """The splits a run reads: train to train, dev to evaluate (at the end, or
    while training), test to predict."""
    evaluates = settings.do_eval or (settings.do_train and settings.eval_every is not None)
    return ([task.train_split] if settings.do_train else []) + \
        (list(task.eval_splits) if evaluates else []) + \
        (list(task.test_splits) if settings.do_predict else [])


def bind_task(task, settings):
    """The task bound to a run of `settings` (unknown task options rejected before
    any work), with the extras its evaluation needs checked."""
    task = task.bind(settings)
    if settings.do_eval:
        for extra in task.extras:
            extras.require(extra, f"evaluating task {task.name!r}")
    return task


def check_run(task, settings, vocabulary_size, checkpoint, examples):
    """The model config of a run of `settings` (`task`: bound to them), once every
    problem the user can get wrong is known: the model, its vocabulary
    (`vocabulary_size`: the tokenizer's) and positions, and every split the run
    reads (`examples(split)` reads one); raises `ValueError` listing them all."""
    config, problem = model_config(settings, checkpoint, vocabulary_size)
    problems = [problem] if problem else []
    if settings.model and settings.init_checkpoint:
        problems.append("give --init_checkpoint (its model is used) or --model (a new "
                        "model), not both")
    problems += filter(None, [config.length_problem(settings.max_seq_length)])
    for split in splits_to_read(task, settings):
        try:
            if not examples(split):
                problems.append(f"the {split} split of task {task.name!r} has no examples")
        except (OSError, ValueError) as e:
            problems.append(str(e))
    if problems:
        # Splits read from one file (a label set learnt from the training
        # file checks dev too) fail with one message: say it once.
        raise ValueError("; ".join(dict.fromkeys(problems)))
    return config


def check_inputs(task, settings):
    """Checks what a run of `settings` reads as `Run` checks it, without starting
    one (no strategy, no model, nothing written): the task's options, the
    vocabulary, the checkpoint (a published name is fetched into the cache), the
    model and every split. For a program that starts its runs later (a search's
    trials): what they would fail on is said once, at its start."""
    task = bind_task(task, settings)
    tokenizer = run_tokenizer(settings)
    check_run(task, settings, tokenizer.vocabulary_size, read_init_checkpoint(settings),
              lambda split: task.read(settings.data_dir, split, task.task_options))
