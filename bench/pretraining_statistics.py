"""albert_tf's pretraining-data statistics over several seeds, against a reference's.

    PYTHONPATH=. python bench/pretraining_statistics.py --text=T.txt [--reference=statistics.json]
        [--seeds=1,2,3] [--mode=sop] [--dupe_factor=40] [--input_format=lines]

Runs `create_pretraining_data` (the `DataOptions` defaults, 128 tokens, 20
predictions, ALBERT's 30k-clean SentencePiece model) once per seed on the
text, measures each run with `albert_tf.pretraining.statistics` and prints
every statistic's mean and sd over the seeds, and, with `--reference` (a
statistics file of `tests/fixtures/pretraining/google/`), Google's mean and
sd and the difference in Google's sds. The last line is the JSON of it all.
The fixture test runs one seed; this is the multi-seed measurement behind
the fixture README's tables.
"""

import argparse
import json
import os
import tempfile

import numpy as np

from albert_tf.pretraining import pipeline, records, statistics
from albert_tf.pretraining.masking import VocabularyTables
from albert_tf.pretraining.options import DataOptions
from albert_tf.tokenizer.sentencepiece.host import HostTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SPM = os.path.join(ROOT, "tests", "fixtures", "spm", "albert_30k_clean.model")
L, P = 128, 20


def measure(text, seed, mode, dupe_factor, input_format, tokenizer, tables):
    options = DataOptions(input_format=input_format, max_seq_length=L,
                          max_predictions_per_seq=P, dupe_factor=dupe_factor,
                          random_next_sentence=mode == "nsp", random_seed=seed)
    with tempfile.TemporaryDirectory() as folder:
        summary = pipeline.create_pretraining_data([text], tokenizer,
                                                   os.path.join(folder, "data"), options)
        data = records.read_records(list(summary.files), L, P)
    return statistics.record_statistics(
        data, tables, L, statistics.corpus_tokens([text], tokenizer, input_format), dupe_factor)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--text", required=True)
    parser.add_argument("--reference")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--mode", choices=("sop", "nsp"), default="sop")
    parser.add_argument("--dupe_factor", type=int, default=40)
    parser.add_argument("--input_format", default="lines")
    args = parser.parse_args()
    tokenizer = HostTokenizer(SPM)
    tables = VocabularyTables.from_tokenizer(tokenizer)
    seeds = [int(s) for s in args.seeds.split(",")]
    runs = [measure(args.text, seed, args.mode, args.dupe_factor, args.input_format, tokenizer,
                    tables) for seed in seeds]
    reference = None
    if args.reference:
        with open(args.reference) as f:
            reference = json.load(f)[args.mode]
    out = {"text": os.path.basename(args.text), "mode": args.mode, "seeds": seeds, "stats": {}}
    print(f"{'statistic':<26}{'albert_tf mean ± sd':>22}" + (
        f"{'Google mean ± sd':>22}{'diff (sd)':>11}" if reference else ""))
    for name in statistics.STATISTICS:
        values = np.array([run[name] for run in runs])
        mean, sd = float(values.mean()), float(values.std(ddof=1)) if len(values) > 1 else 0.0
        row = {"mean": mean, "sd": sd, "runs": values.tolist()}
        line = f"{name:<26}{mean:>13.4f} ± {sd:<7.4f}"
        if reference:
            g_mean, g_sd = reference["mean"][name], reference["sd"][name]
            row.update(google_mean=g_mean, google_sd=g_sd)
            line += f"{g_mean:>13.4f} ± {g_sd:<7.4f}{(mean - g_mean) / max(g_sd, 1e-9):>+10.1f}"
        out["stats"][name] = row
        print(line)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
