"""The grid's pretraining data: made once per tokenizer and sentence task.

Each corpus file is cut into a training part and a held-out end (at a blank
line, so that no paragraph is split), written under `data/text/`. From those,
records are made with the pipeline of `create_pretraining_data`:

    data/<tokenizer fingerprint>-<options hash>/
        sop/train-*.tfrecord     sop/heldout-*.tfrecord
        nsp/train-*.tfrecord     nsp/heldout-*.tfrecord

Variants with `sentence_task=none` train on the SOP records (their sentence
labels are not used), so that none and SOP see the same masks. Both held-out
sets are always made: every variant is scored on NSP and on SOP pairs (the
paper's Table 5); they are cut as `HELDOUT_SINGLE_SENTENCE` says. A set is
complete when its `summary.json` exists; a grid
started again reuses it, and a cut-short one is made again.
"""

import hashlib
import json
import os

from albert_tf.io_utils import atomic_file, read_text
from albert_tf.pretraining.documents import expand_inputs
from albert_tf.pretraining import sentence_scores
from albert_tf.pretraining.options import DataOptions

DATA_DIR = "data"
DATA_TASKS = ("sop", "nsp")
SPLITS = ("train", "heldout")
_DONE = "summary.json"
# Held-out pairs hold what their task asks and nothing else: a one-sentence
# chunk is cut inside the sentence (`DataOptions.single_sentence`), not paired
# with a random document, so that a held-out SOP pair's label 1 means
# "swapped" and neither set leans to one label (training pairs follow
# `AblationSettings.single_sentence`: the reference's sampling by default).
HELDOUT_SINGLE_SENTENCE = "split"


def data_task(sentence_task):
    """The records a variant trains on: `none` reads the SOP records."""
    return "nsp" if sentence_task == "nsp" else "sop"


def split_text(path, fraction):
    """`(train_lines, heldout_lines)`: the file cut at the first blank line after
    `1 - fraction` of its lines that still has text after it (else at that line),
    so that paragraphs and documents stay whole where the text allows."""
    lines = read_text(path).splitlines()
    cut = min(int(len(lines) * (1 - fraction)), max(len(lines) - 1, 0))
    last_text = max((i for i, line in enumerate(lines) if line.strip()), default=0)
    blank = next((i for i in range(cut, last_text) if not lines[i].strip()), cut)
    return lines[:blank], lines[blank:]


def write_split_corpus(files, fraction, folder):
    """Writes `folder/{train,heldout}/<i>-<name>` for every corpus file; returns
    `{split: [paths]}`. The Gutenberg licence header stays with the training
    part and the footer with the held-out part, where the reader drops them."""
    out = {split: [] for split in SPLITS}
    for i, path in enumerate(files):
        parts = dict(zip(SPLITS, split_text(path, fraction)))
        for split, lines in parts.items():
            target = os.path.join(folder, split, f"{i:03d}-{os.path.basename(path)}")
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with atomic_file(target, encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
            out[split].append(target)
    return out


def data_options(settings, task, split):
    """The `DataOptions` of one record set."""
    return DataOptions(
        input_format=settings.input_format, max_seq_length=settings.max_seq_length,
        max_predictions_per_seq=settings.max_predictions_per_seq,
        dupe_factor=settings.dupe_factor if split == "train" else 1,
        random_next_sentence=task == "nsp",
        single_sentence=(HELDOUT_SINGLE_SENTENCE if split == "heldout"
                         else settings.single_sentence),
        random_seed=settings.data_seed + (0 if split == "train" else 1))


def data_folder(settings, tokenizer):
    """`<output_dir>/data/<fingerprint>-<hash>`: one folder per tokenizer and data settings."""
    key = json.dumps([settings.corpus, settings.input_format, settings.max_seq_length,
                      settings.max_predictions_per_seq, settings.dupe_factor,
                      settings.heldout_fraction, settings.data_seed, HELDOUT_SINGLE_SENTENCE,
                      settings.single_sentence])
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    return os.path.join(settings.output_dir, DATA_DIR, f"{tokenizer.fingerprint()}-{digest}")


def record_pattern(folder, task, split):
    return os.path.join(folder, task, f"{split}-*.tfrecord")


def build_data(settings, tokenizer, train_tasks=DATA_TASKS, log=lambda line: None):
    """Makes the held-out records of both sentence tasks and the training records
    of `train_tasks` (those not complete yet); returns the folder.

    `log` gets one line per set made or reused.
    """
    from albert_tf.pretraining import pipeline

    folder = data_folder(settings, tokenizer)
    text = write_split_corpus(expand_inputs(settings.corpus.split(","), "--corpus"),
                              settings.heldout_fraction, os.path.join(folder, "text"))
    wanted = [(task, split) for task in DATA_TASKS for split in SPLITS
              if split == "heldout" or task in train_tasks]
    for task, split in wanted:
        done = os.path.join(folder, task, f"{split}-{_DONE}")
        if os.path.isfile(done):
            log(f"data {task}/{split}: made before ({done})")
            continue
        os.makedirs(os.path.join(folder, task), exist_ok=True)
        summary = pipeline.create_pretraining_data(
            text[split], tokenizer, os.path.join(folder, task, split),
            data_options(settings, task, split))
        with atomic_file(done, encoding="utf-8") as f:
            json.dump({"instances": summary.instances, "documents": summary.documents,
                       "labels": [int(n) for n in summary.labels],
                       "seconds": summary.seconds}, f, indent=2)
        log(f"data {task}/{split}: {summary.instances:,} instances from "
            f"{summary.documents:,} documents in {summary.seconds:.0f} s")
    for task, split in wanted:
        with open(os.path.join(folder, task, f"{split}-{_DONE}"), encoding="utf-8") as f:
            made = json.load(f)
        if not made["instances"]:
            raise ValueError(f"the {split} part of --corpus gives no {task} pairs (raise "
                             f"--heldout_fraction={settings.heldout_fraction} or give "
                             "more text)")
        if split == "heldout":
            warning = few_heldout(task, made["instances"], made["documents"],
                                  settings.heldout_fraction)
            if warning:
                log(warning)
    return folder


def few_heldout(task, instances, documents, fraction):
    """The warning for a held-out set too small to score on (fewer pairs than
    `sentence_scores.ENOUGH_EXAMPLES`, the threshold the table's notes use), or None."""
    if instances >= sentence_scores.ENOUGH_EXAMPLES:
        return None
    low, high = sentence_scores.wilson_interval(instances / 2, instances)
    return (f"warning: {task} is scored on {instances} held-out instance(s) from {documents} "
            f"document(s): an accuracy near 0.5 is uncertain by +-{(high - low) / 2:.3f} "
            f"(95% interval); raise --heldout_fraction={fraction:g} or give more text "
            f"for {sentence_scores.ENOUGH_EXAMPLES} or more")
