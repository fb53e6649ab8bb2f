r"""Fine-tunes ALBERT on a task and reports the task's official metric.

    python -m albert_tf.finetune --task=rte --data_dir=glue/RTE \
        --init_checkpoint=albert_base_v2 --output_dir=runs/rte

Settings come from the task's recipe (configs/finetune_recipes.json), then
`--config` (a JSON file), then the flags you give. A killed run resumes with
`--output_dir` alone. `--demo` runs the whole pipeline offline on data the
project generates, in a few minutes on a laptop CPU.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags  # noqa: E402

from albert_tf import cli  # noqa: E402
from albert_tf.training import settings as settings_lib  # noqa: E402

FLAGS = flags.FLAGS
_DEFAULTS = settings_lib.FinetuneSettings(task="", output_dir="")

flags.DEFINE_string("task", None, "Task name, e.g. rte, mnli, squad, squad_v2.")
flags.DEFINE_string("output_dir", None, "Where checkpoints, results and the model go.")
flags.DEFINE_string("data_dir", None, "The task's data folder (e.g. glue/RTE).")
flags.DEFINE_string("init_checkpoint", None,
                    "A pretrained checkpoint in any format load_pretrained reads, or a "
                    "published name such as albert_base_v2.")
flags.DEFINE_string("model", _DEFAULTS.model,
                    "Model preset or config file, used only without --init_checkpoint.")
flags.DEFINE_string("spm_model", None,
                    "SentencePiece model; default: the one shipped with the checkpoint.")
flags.DEFINE_string("config", None, "A JSON file of settings (between recipe and flags).")
flags.DEFINE_boolean("demo", False, "Run offline on generated data with a small model.")

flags.DEFINE_float("learning_rate", None, "Peak learning rate (recipe default).")
flags.DEFINE_integer("batch_size", None, "Global batch size, split across replicas.")
flags.DEFINE_integer("train_steps", None, "Optimizer updates.")
flags.DEFINE_integer("warmup_steps", None, "Linear warmup updates.")
flags.DEFINE_integer("max_seq_length", None, "Longest input in tokens.")
flags.DEFINE_float("dropout", None, "ALBERT dropout while fine-tuning.")
flags.DEFINE_float("classifier_dropout", None, "Dropout before the task head.")
flags.DEFINE_enum("optimizer", _DEFAULTS.optimizer, ["adamw", "lamb"], "Optimizer.")
flags.DEFINE_float("weight_decay", _DEFAULTS.weight_decay, "Decoupled weight decay.")
flags.DEFINE_float("clip_norm", _DEFAULTS.clip_norm, "Global gradient-norm clip.")
flags.DEFINE_integer("accumulation_steps", _DEFAULTS.accumulation_steps,
                     "Micro-batches per update (gradient accumulation).")
flags.DEFINE_boolean("recompute", _DEFAULTS.recompute,
                     "Recompute each encoder layer in the backward pass instead of keeping its "
                     "activations: less memory, about 1.3x the step time (needs --dropout=0).")
flags.DEFINE_integer("seed", _DEFAULTS.seed, "Seed of initialisation, dropout and data order.")
flags.DEFINE_boolean("length_aware_batching", _DEFAULTS.length_aware_batching,
                     "Batch examples of similar length (else random batches).")
flags.DEFINE_boolean("fixed_padding", _DEFAULTS.fixed_padding,
                     "Pad every batch to --max_seq_length instead of to its longest example "
                     "(what fixed-shape pipelines do; for comparison).")
flags.DEFINE_enum("strategy", _DEFAULTS.strategy,
                  ["auto", "one_device", "mirrored", "multi_worker", "tpu"],
                  "tf.distribute strategy; multi_worker reads TF_CONFIG.")
flags.DEFINE_string("tpu", _DEFAULTS.tpu, "TPU name or address (with --strategy=tpu/auto).")
flags.DEFINE_enum("precision", _DEFAULTS.precision, ["auto", "fp32", "bf16", "fp16"],
                  "Mixed precision; auto picks the fastest measured for the device.")
flags.DEFINE_enum("xla", _DEFAULTS.xla, ["auto", "on", "off"], "XLA compilation.")
flags.DEFINE_boolean("do_train", _DEFAULTS.do_train, "Train.")
flags.DEFINE_boolean("do_eval", _DEFAULTS.do_eval, "Evaluate on the task's dev split(s).")
flags.DEFINE_boolean("do_predict", _DEFAULTS.do_predict, "Write test-set predictions.")
flags.DEFINE_boolean("export", _DEFAULTS.export, "Export a SavedModel at the end.")
flags.DEFINE_integer("eval_batch_size", _DEFAULTS.eval_batch_size, "Global eval batch size.")
flags.DEFINE_integer("checkpoint_every", _DEFAULTS.checkpoint_every,
                     "Save a resumable checkpoint every N updates.")
flags.DEFINE_integer("keep_checkpoints", _DEFAULTS.keep_checkpoints, "Checkpoints kept.")
flags.DEFINE_integer("log_every", _DEFAULTS.log_every, "TensorBoard scalars every N updates.")
flags.DEFINE_float("divergence_factor", _DEFAULTS.divergence_factor,
                   "Stop when the loss exceeds this multiple of the first loss.")
# Question answering (squad, squad_v2).
flags.DEFINE_integer("doc_stride", None, "SQuAD: tokens between window starts.")
flags.DEFINE_integer("max_query_length", None, "SQuAD: longest question in tokens.")
flags.DEFINE_integer("n_best_size", None, "SQuAD: candidate spans kept per question.")
flags.DEFINE_integer("max_answer_length", None, "SQuAD: longest answer in tokens.")
flags.DEFINE_enum("squad_head", None, ["albert_v2", "cls_null"],
                  "squad_v2: ALBERT's own v2 head or the plain [CLS]-null span head.")
flags.DEFINE_integer("start_n_top", None, "squad_v2 ALBERT head: start positions in the beam.")
flags.DEFINE_integer("end_n_top", None, "squad_v2 ALBERT head: ends per start in the beam.")

TASK_OPTION_FLAGS = ("doc_stride", "max_query_length", "n_best_size", "max_answer_length",
                     "squad_head", "start_n_top", "end_n_top")
# Flags that may change when a run is resumed (they do not change its result).
RESUMABLE = ("strategy", "tpu", "log_every", "do_eval", "do_predict", "export",
             "eval_batch_size", "keep_checkpoints")


def explicit_settings():
    """The settings the user set on the command line."""
    given = {name: FLAGS[name].value for name in settings_lib.FIELDS
             if name in FLAGS and FLAGS[name].present}
    options = {name: FLAGS[name].value for name in TASK_OPTION_FLAGS if FLAGS[name].present}
    if options:
        given["task_options"] = options
    return given


def resolve_settings(tasks, base=None):
    """Settings of this invocation: a new run, or the resumption of a saved one.

    `base`: settings between the recipe and the flags (those of `--demo`).
    """
    given = explicit_settings()
    saved = settings_lib.load_saved(FLAGS.output_dir)
    if saved is not None:
        fixed = {k: v for k, v in given.items() if k not in RESUMABLE}
        changed = settings_lib.differences(saved, fixed)
        if changed:
            raise ValueError(
                f"--output_dir={FLAGS.output_dir} holds a run with other settings "
                f"({', '.join(f'{k}: saved {a!r}, given {b!r}' for k, (a, b) in changed.items())}"
                "); pass only --output_dir to resume it, or use a new --output_dir")
        return tasks.get(saved.task), saved.replace(
            **{k: v for k, v in given.items() if k in RESUMABLE})
    if not FLAGS.task:
        raise ValueError(f"--task is required (known tasks: {', '.join(tasks.names())})")
    task = tasks.get(FLAGS.task)
    merged = dict(base or {})
    options = {**merged.get("task_options", {}), **given.get("task_options", {})}
    merged.update(given)
    if options:
        merged["task_options"] = options
    return task, settings_lib.resolve(task, merged, FLAGS.config)


def print_results(results):
    """The metrics of each evaluated split, one line each."""
    for split, values in results.items():
        if isinstance(values, dict) and split not in ("train", "predictions"):
            shown = ", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                              for k, v in values.items())
            print(f"{split}: {shown}")
    if "train" in results:
        train = results["train"]
        print(f"train: {train['step']} steps, {train.get('examples', 0)} examples, "
              f"{train.get('train_examples_per_second', 0):.1f} examples/s")


def is_chief(settings):
    """Whether this process is the one that wrote the run's model/ folder.

    Only a multi-worker run has other workers; they are told apart as `run`
    tells them apart (`worker_index`), from the TF_CONFIG cluster resolver that
    MultiWorkerMirroredStrategy reads.
    """
    if settings.strategy != "multi_worker":
        return True
    import types

    import tensorflow as tf

    from albert_tf.training.finetuning import worker_index

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    return worker_index(types.SimpleNamespace(cluster_resolver=resolver)) is None


def main(argv):
    import tasks  # the registry; imported after flag parsing to keep --help fast

    from albert_tf import demo
    from albert_tf.checkpoints import CheckpointError
    from albert_tf.training.callbacks import TrainingDiverged
    from albert_tf.training.finetuning import run

    cli.quiet_tensorflow(FLAGS)
    with cli.user_errors(CheckpointError, TrainingDiverged):
        cli.check_arguments(argv, FLAGS, required=("output_dir",))
        base = None
        if FLAGS.demo:
            FLAGS.task = FLAGS.task or "squad"
            base = demo.prepare(FLAGS.task, FLAGS.output_dir)
        task, settings = resolve_settings(tasks, base)
        results = run(task, settings)
        print_results(results)
        if settings.export and is_chief(settings):
            from albert_tf.export.exporter import export_run

            print(f"export: {export_run(settings.output_dir)}")
        if FLAGS.demo:
            demo.finish(task, settings)


if __name__ == "__main__":
    app.run(main)
