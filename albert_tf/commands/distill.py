r"""Distils a fine-tuned ALBERT (the teacher) into a smaller ALBERT (the student).

    python -m albert_tf.distill --teacher=runs/mrpc --student=albert_tiny \
        --output_dir=runs/mrpc_tiny [--init_from_teacher] [--hidden_weight=1]

The student is fine-tuned on the teacher's task and data (its task, data
folder, options, sequence length and recipe, unless flags say otherwise)
with `hard_weight` x the task loss plus `soft_weight` x the soft-target loss
at `--temperature`, and optionally intermediate losses (`--hidden_weight`,
`--attention_weight`, on `--layer_map`'s layers). The teacher's outputs are
computed once and kept in `<output_dir>/teacher/`. The result,
`<output_dir>/model/`, is an ordinary fine-tuned model folder: export and
predict take it as any other. A killed run resumes with `--output_dir` alone.
"""

import os

from albert_tf import tasks  # the registry: no TensorFlow, so --help and flag checks are quick
from albert_tf import input_paths
from albert_tf.commands import cli
from albert_tf.commands.program import Flags, Program
from albert_tf.config import preset_names
from albert_tf.distillation.settings import DistillSettings
from albert_tf.settings import merged
from albert_tf.training import settings as settings_lib
from albert_tf.training.settings import FinetuneSettings

# What a student does not take from its teacher's run: where it goes, what
# it starts from, and this machine's choices.
NOT_INHERITED = ("output_dir", "init_checkpoint", "model", "vocab_file", "strategy", "tpu",
                 "precision", "xla", "layer_execution", "export", "do_predict",
                 # How the teacher's run was watched is not the student's recipe.
                 "eval_every", "keep_best", "best_metric", "early_stopping_patience",
                 "early_stopping_min_delta")


# Fine-tuning flags a distillation run has but takes from elsewhere.
_STUDENT = "the student is --student: a preset, a config file or a checkpoint"
UNUSED = {"model": _STUDENT, "init_checkpoint": _STUDENT,
          "vocab_file": "the student reads with its teacher's vocabulary"}


def student_fields(student, init_from_teacher):
    """`{"model": ...}` (a preset or config file) or `{"init_checkpoint": ...}`."""
    if student in preset_names() or (student.endswith(".json") and os.path.isfile(student)):
        return {"model": student}
    if input_paths.missing(student):
        raise FileNotFoundError(f"--student={student}: not a preset ({', '.join(preset_names())})"
                                ", a model config file or a checkpoint")
    if init_from_teacher:
        raise ValueError(f"--student={student} is a checkpoint (not a preset or config "
                         "file): it starts from its own weights, so --init_from_teacher has "
                         "nothing to do; give one or the other")
    return {"init_checkpoint": student}


def load_task(name):
    """The registered task `name` (its module imports TensorFlow: started with its
    start-up noise filtered)."""
    cli.load_tensorflow()
    return tasks.get(name)


def resolve_settings(given):
    """`(task, settings)`: a new distillation run, or the resumption of a saved one
    (`given`: the `program.Given` settings: the flags set, and `--config`'s,
    between the teacher's and the flags)."""
    output_dir = given.flags["output_dir"]
    if settings_lib.has_progress(output_dir):
        saved = settings_lib.load_saved(DistillSettings, output_dir)
        if saved is not None:
            return load_task(saved.task), settings_lib.resumed(saved, given.flags)
    given.check_required()
    explicit = merged(given.config, given.flags)
    for name, why in UNUSED.items():
        if explicit.get(name) not in (None, ""):
            raise ValueError(f"--{name}={explicit[name]}: not used by distill ({why})")
    cli.load_tensorflow()  # reading the teacher imports it: without its start-up noise
    from albert_tf.checkpoints import native
    from albert_tf.export.exporter import resolve_model_dir

    teacher_dir = resolve_model_dir(explicit["teacher"])
    meta = native.read_metadata(teacher_dir)
    if "task" not in meta or "settings" not in meta:
        raise ValueError(f"--teacher={explicit['teacher']}: {teacher_dir} is not a fine-tuned "
                         "model (no task in it); give the folder a fine-tuning run wrote")
    teacher = FinetuneSettings.from_dict(meta["settings"], f"{teacher_dir}: settings")
    if explicit.get("task") and explicit["task"] != teacher.task:
        raise ValueError(f"--task={explicit['task']}: the teacher was fine-tuned on "
                         f"{teacher.task!r}; a student learns the teacher's task")
    values = merged({k: v for k, v in teacher.to_dict().items() if k not in NOT_INHERITED},
                    explicit)
    values.update(teacher=teacher_dir, task=teacher.task,
                  **student_fields(explicit["student"], explicit.get("init_from_teacher", False)))
    # The teacher's warmup share of its steps.
    settings_lib.keep_warmup_share(values, explicit, teacher.warmup_steps, teacher.train_steps)
    settings = DistillSettings.from_dict(values, "flags")
    return load_task(teacher.task), settings


def print_comparison(results):
    """The student's metrics against the teacher's, as ratios."""
    teacher = results.get("teacher", {})
    for split, metrics in teacher.items():
        student = results.get(split, {})
        shared = [k for k, v in metrics.items() if isinstance(v, float) and
                  isinstance(student.get(k), float) and v]
        if shared:
            print(f"student / teacher on {split}: " + ", ".join(
                f"{k} {student[k] / metrics[k]:.3f}" for k in shared))


def run(given):
    """The command: prints the student's results beside the teacher's; returns the
    results."""
    task, settings = resolve_settings(given)
    from albert_tf.distillation.run import distill
    from albert_tf.io_utils import read_json
    from albert_tf.training import results as results_lib
    from albert_tf.training.devices import is_chief
    from albert_tf.training.run_folder import RESULTS_FILE
    from albert_tf.tasks.finetuned import export_run, load_finetuned

    if not set(given.flags) & set(settings.fields_with("run_control")) \
            and results_lib.report_complete(settings.output_dir):
        return read_json(os.path.join(settings.output_dir, RESULTS_FILE))

    def load_teacher():
        return load_finetuned(settings.teacher)[2]

    results = distill(task, settings, load_teacher)
    results_lib.print_results(results)
    print_comparison(results)
    if settings.export and is_chief(settings.strategy):
        print(f"export: {export_run(settings.output_dir)}")
    return results


PROGRAM = Program("distill", run, Flags(
    DistillSettings, default_from="the teacher's",
    unset=(*DistillSettings.fields_with("recipe"), "data_dir", "task")), resumes="output_dir")
