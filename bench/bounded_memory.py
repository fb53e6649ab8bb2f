"""Training on your own file in bounded memory: peak memory against the file's rows.

    python bench/bounded_memory.py [--rows=10000,100000,1000000] [--steps=20] \
        [--workdir=runs/bounded_memory]

For each row count, writes a CSV of generated labelled sentences (three
classes) and runs `python -m albert_tf.finetune --task=text_classification`
on it with `albert_tiny` (featurize every row, train `--steps` steps of 32,
evaluate 2,000 held-out rows), each run in its own process, and reports the
process's peak resident memory (`wait4`'s `ru_maxrss`), the seconds it took,
and the size of the featurized cache on disk. The features are memory-mapped
files: memory should stay flat while the cache grows with the rows.
"""

import argparse
import csv
import os
import random
import subprocess
import sys
import tempfile
import time

from common import ROOT, emit, machine, table

WORDS = ("the a one every old new big small red blue green quick slow happy sad dog cat bird "
         "house tree river road city field morning night rain sun wind runs sleeps reads "
         "writes sings walks sees finds keeps loses gives takes near under over behind "
         "before after quietly loudly today yesterday").split()
LABELS = ("positive", "negative", "neutral")


def write_csv(path, rows, seed=0):
    rng = random.Random(seed)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        for _ in range(rows):
            label = rng.randrange(3)
            words = rng.choices(WORDS, k=rng.randint(8, 30)) + [("good", "bad", "fine")[label]]
            rng.shuffle(words)
            writer.writerow([" ".join(words), LABELS[label]])


def _anonymous_mib(pid):
    """The process's resident anonymous memory (heap, stacks; not mapped files), MiB."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith("RssAnon:")) / 1024
    except (OSError, StopIteration):
        return 0.0


def measured_run(args):
    """(exit status, peak RSS MiB, peak anonymous RSS MiB, seconds, output tail) of one
    command. RSS counts the pages of memory-mapped files the process touched, which the
    kernel drops under pressure; the anonymous part is what it cannot (sampled every 0.1 s)."""
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env, stdout=log,
                                   stderr=subprocess.STDOUT, text=True)
        anonymous = 0.0
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            anonymous = max(anonymous, _anonymous_mib(process.pid))
            time.sleep(0.1)
        process.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        output = log.read()
    return (process.returncode, usage.ru_maxrss / 1024, anonymous, time.perf_counter() - start,
            output[-2000:])


def folder_mib(path):
    total = 0
    for dirpath, _, names in os.walk(path):
        total += sum(os.path.getsize(os.path.join(dirpath, n)) for n in names)
    return total / 2 ** 20


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="10000,100000,1000000")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--max_seq_length", type=int, default=64)
    parser.add_argument("--workdir", default=os.path.join(ROOT, "runs", "bounded_memory"))
    args = parser.parse_args()
    print(machine(), flush=True)
    os.makedirs(args.workdir, exist_ok=True)
    dev = os.path.join(args.workdir, "dev.csv")
    write_csv(dev, 2000, seed=1)
    spm = os.path.join(ROOT, "tests", "fixtures", "spm", "albert_30k_clean.model")
    results = []
    for rows in (int(r) for r in args.rows.split(",")):
        train = os.path.join(args.workdir, f"train-{rows}.csv")
        if not os.path.isfile(train):
            write_csv(train, rows)
        out = os.path.join(args.workdir, f"run-{rows}")
        if os.path.isdir(out):
            import shutil

            shutil.rmtree(out)
        status, rss, anonymous, seconds, tail = measured_run([
            "-m", "albert_tf.finetune", "--task=text_classification", f"--train_file={train}",
            f"--eval_file={dev}", "--text_column=text", "--label_column=label",
            "--model=albert_tiny", f"--vocab_file={spm}",
            f"--max_seq_length={args.max_seq_length}", f"--train_steps={args.steps}",
            "--batch_size=32", "--warmup_steps=2", "--learning_rate=1e-3",
            "--precision=fp32", f"--output_dir={out}"])
        if status != 0:
            raise RuntimeError(f"the run on {rows} rows failed:\n{tail}")
        results.append({"rows": rows, "csv_mib": round(os.path.getsize(train) / 2 ** 20, 1),
                         "features_mib": round(folder_mib(os.path.join(out, "features")), 1),
                         "peak_rss_mib": round(rss, 1), "peak_anonymous_mib": round(anonymous, 1),
                         "seconds": round(seconds, 1)})
        print(results[-1], flush=True)
    first = results[0]
    for r in results:
        r["rows_vs_smallest"] = round(r["rows"] / first["rows"], 1)
        r["anonymous_vs_smallest"] = round(r["peak_anonymous_mib"] / first["peak_anonymous_mib"],
                                           3)
    print(table(results, ["rows", "csv_mib", "features_mib", "peak_rss_mib",
                          "peak_anonymous_mib", "seconds", "rows_vs_smallest",
                          "anonymous_vs_smallest"]))
    emit({"bounded_memory": results})


if __name__ == "__main__":
    main()
