"""Compression side by side: teacher, student without the teacher, distilled student,
and each one's reduced exports, in one run and one table.

    python bench/compression.py --data_dir=../shared/data/glue/MRPC [--task=mrpc] \
        [--teacher_model=bench/compression_teacher.json] [--student_model=albert_tiny] \
        [--teacher_init=CHECKPOINT] [--teacher_steps=400] [--student_steps=400] \
        [--seeds=1,2] [--workdir=runs/compression] [--output=compression.json]

Every step is the toolkit's own command in its own process, as a user runs it:
`albert_tf.finetune` (the teacher; each student without the teacher),
`albert_tf.distill` (each distilled student, same steps and seeds), and
`albert_tf.export --tflite_variants=float16,dynamic_int8,int8 --eval_data`,
which scores every variant (the float SavedModel, each TFLite file through
the LiteRT interpreter with XNNPACK where installed) on the same dev
examples and times it at batch 1 (median of 20 calls) and at batch 32
(examples/s over 256 examples), through the `encoded` signature (token ids
in: the same work for every variant, tokenization left out).

The table has, per model and variant: unique parameters (what is stored),
the file's size, forward FLOPs per token (albert_tf.accounting: what is
computed), the latencies, the task metric, and ratios to the float teacher.
The students' metrics are given per seed, with their mean.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys

from common import ROOT, machine, table

VARIANTS = ("float16", "dynamic_int8", "int8")


def command(module, *args):
    """Runs `python -m module args`; raises with its last output on failure."""
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-m", module, *args], capture_output=True,
                            text=True, env=env, cwd=ROOT)
    if result.returncode != 0:
        raise RuntimeError(f"python -m {module} {' '.join(args)} failed:\n"
                           f"{(result.stdout + result.stderr)[-3000:]}")
    return result.stdout


def results_of(run_dir):
    with open(os.path.join(run_dir, "eval_results.json")) as f:
        return json.load(f)


def metric_name(results):
    """The task's headline metric in its dev results (the first of these it has)."""
    dev = results["dev"]
    return next(k for k in ("f1", "accuracy", "pearson", "matthews_corrcoef", "exact_match")
                if k in dev)


def train_runs(args, common):
    """Trains the teacher, then per seed a student without and with it; returns the run folders."""
    work = args.workdir
    teacher = os.path.join(work, "teacher")
    start = ([f"--init_checkpoint={args.teacher_init}"] if args.teacher_init
             else [f"--model={args.teacher_model}", f"--vocab_file={args.vocab_file}"])
    if not os.path.isfile(os.path.join(teacher, "eval_results.json")):
        print(f"teacher: {teacher}", flush=True)
        command("albert_tf.finetune", f"--task={args.task}", f"--data_dir={args.data_dir}",
                f"--output_dir={teacher}", f"--train_steps={args.teacher_steps}",
                f"--learning_rate={args.teacher_learning_rate}", *start, *common)
    runs = {"teacher": [teacher], "student": [], "distilled": []}
    for seed in args.seeds:
        plain = os.path.join(work, f"student-seed{seed}")
        distilled = os.path.join(work, f"distilled-seed{seed}")
        steps = [f"--train_steps={args.student_steps}", f"--seed={seed}",
                 f"--learning_rate={args.student_learning_rate}"]
        if not os.path.isfile(os.path.join(plain, "eval_results.json")):
            print(f"student without the teacher: {plain}", flush=True)
            command("albert_tf.finetune", f"--task={args.task}", f"--data_dir={args.data_dir}",
                    f"--output_dir={plain}", f"--model={args.student_model}",
                    f"--vocab_file={os.path.join(teacher, 'model', _vocabulary(teacher))}",
                    *steps, *common)
        if not os.path.isfile(os.path.join(distilled, "eval_results.json")):
            print(f"distilled student: {distilled}", flush=True)
            command("albert_tf.distill", f"--teacher={teacher}",
                    f"--student={args.student_model}", f"--output_dir={distilled}",
                    f"--temperature={args.temperature}", *steps, *common)
        runs["student"].append(plain)
        runs["distilled"].append(distilled)
    return runs


def _vocabulary(run_dir):
    with open(os.path.join(run_dir, "model", "albert_tf_config.json")) as f:
        return json.load(f)["vocabulary"]["file"]


def export(run_dir, args):
    """Exports a run with every reduced variant scored; returns the export's description."""
    export_dir = os.path.join(run_dir, "export")
    info_path = os.path.join(export_dir, "1", "assets.extra", "albert_tf_export.json")
    if not os.path.isfile(info_path):
        command("albert_tf.export", f"--model_dir={run_dir}", f"--export_dir={export_dir}",
                "--version=1", f"--precision={args.precision}",
                f"--formats={','.join(f'tflite:{v}' for v in VARIANTS)}",
                f"--eval_data={args.data_dir}",
                f"--calibration_examples={args.calibration_examples}")
    with open(info_path) as f:
        return json.load(f), os.path.join(export_dir, "1")


def _size_mb(folder, variant, info):
    """The file size of a variant: the SavedModel folder (without TFLite files), or its .tflite."""
    if variant.startswith("tflite_"):
        name = variant[len("tflite_"):]
        entry = info["formats"]["tflite" if name == "float32" else f"tflite:{name}"]
        return os.path.getsize(os.path.join(folder, entry["file"])) / 2 ** 20
    total = 0
    for dirpath, _, names in os.walk(folder):
        total += sum(os.path.getsize(os.path.join(dirpath, n)) for n in names
                     if not n.endswith(".tflite"))
    return total / 2 ** 20


def model_costs(run_dir, seq_length):
    """(unique parameters, forward FLOPs per token) of a run's model, backbone and head."""
    from albert_tf import accounting
    from albert_tf.config import AlbertConfig
    from safetensors import safe_open

    with open(os.path.join(run_dir, "model", "albert_tf_config.json")) as f:
        config = AlbertConfig.from_dict(json.load(f)["model"])
    with safe_open(os.path.join(run_dir, "model", "model.safetensors"), "np") as f:
        params = sum(math.prod(f.get_slice(k).get_shape()) for k in f.keys())
    flops = accounting.total(accounting.component_costs(config, seq_length)).flops_per_token
    return params, flops, config


def rows_for(name, run_dirs, args, metric):
    """Table rows of one model (its first run's export; the metric of every seed)."""
    info, folder = export(run_dirs[0], args)
    params, flops, config = model_costs(run_dirs[0], args.max_seq_length)
    seeds = [results_of(r)["dev"][metric] for r in run_dirs]
    evaluation = info["evaluation"]["variants"]
    rows = []
    for variant, measured in evaluation.items():
        if variant == "float32":  # the Keras model the export was made from
            continue
        rows.append({
            "model": name, "variant": variant, "layers": config.num_layers,
            "hidden": config.hidden_dim, "params": params,
            "size_mb": round(_size_mb(folder, variant, info), 2),
            "flops_per_token": int(flops), "batch1_ms": measured["batch1_ms"],
            "batch32_per_s": measured["batch32_per_s"],
            metric: round(measured[metric], 4),
            f"{metric}_per_seed": [round(s, 4) for s in seeds],
            f"{metric}_seed_mean": round(statistics.mean(seeds), 4),
        })
    return rows


def add_ratios(rows, metric):
    reference = next(r for r in rows if r["model"] == "teacher" and
                     r["variant"].startswith("saved_model"))
    for r in rows:
        r["speedup_b1"] = round(reference["batch1_ms"] / r["batch1_ms"], 2)
        r["speedup_b32"] = round(r["batch32_per_s"] / reference["batch32_per_s"], 2)
        r["size_ratio"] = round(r["size_mb"] / reference["size_mb"], 3)
        r["flops_ratio"] = round(r["flops_per_token"] / reference["flops_per_token"], 3)
        r[f"{metric}_vs_teacher"] = round(r[metric] - reference[metric], 4)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data_dir", required=True)
    parser.add_argument("--task", default="mrpc")
    parser.add_argument("--teacher_model",
                        default=os.path.join(ROOT, "bench", "compression_teacher.json"),
                        help="The teacher's config (6 shared layers, H=256), trained from "
                        "scratch; or --teacher_init")
    parser.add_argument("--student_model", default="albert_tiny",
                        help="The student: a preset or config file")
    parser.add_argument("--teacher_init", default=None,
                        help="A pretrained checkpoint for the teacher "
                             "(instead of --teacher_model).")
    parser.add_argument("--vocab_file", default=os.path.join(
        ROOT, "tests", "fixtures", "spm", "albert_30k_clean.model"))
    parser.add_argument("--teacher_steps", type=int, default=400)
    parser.add_argument("--student_steps", type=int, default=400)
    parser.add_argument("--teacher_learning_rate", type=float, default=1e-4)
    parser.add_argument("--student_learning_rate", type=float, default=3e-4)
    parser.add_argument("--temperature", type=float, default=2.0)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--seeds", type=lambda s: [int(x) for x in s.split(",")],
                        default=[1, 2])
    parser.add_argument("--precision", default="fp32",
                        help="the SavedModels' compute precision (export --precision)")
    parser.add_argument("--calibration_examples", type=int, default=128)
    parser.add_argument("--workdir", default=os.path.join(ROOT, "runs", "compression"))
    parser.add_argument("--output", default=None, help="also write the rows as JSON here")
    args = parser.parse_args()
    print(machine(), flush=True)
    common = [f"--max_seq_length={args.max_seq_length}", f"--batch_size={args.batch_size}",
              "--checkpoint_every=1000", "--log_every=100", "--precision=fp32"]
    runs = train_runs(args, common)
    metric = metric_name(results_of(runs["teacher"][0]))
    rows = []
    for name in ("teacher", "student", "distilled"):
        print(f"export and measure: {name}", flush=True)
        rows += rows_for(name, runs[name], args, metric)
    add_ratios(rows, metric)
    columns = ["model", "variant", "layers", "hidden", "params", "size_mb", "flops_per_token",
               "batch1_ms", "batch32_per_s", metric, f"{metric}_seed_mean", "speedup_b1",
               "speedup_b32", "size_ratio", "flops_ratio", f"{metric}_vs_teacher"]
    print(table(rows, columns))
    for name in ("teacher", "student", "distilled"):
        seeds = next(r for r in rows if r["model"] == name)[f"{metric}_per_seed"]
        print(f"{name}: dev {metric} per seed {seeds}")
    if args.output:
        with open(args.output, "w") as f:
            json.dump({"machine": machine(), "metric": metric, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
