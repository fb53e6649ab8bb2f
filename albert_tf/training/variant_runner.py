"""One resumable runner of variants: the ablation grid, seeds, k-fold and search all use it.

A set of variants is a folder with one sub-folder per variant (`seed-3`,
`fold-2`, `trial-7`, an ablation variant's name). A variant is done when its
record, `<folder>/<name>/result.json`, exists: it is written last and
atomically, so a variant interrupted anywhere before is run again (and its own
run continues from its checkpoints), while a done one is read back and never
run again. What a variant is and how it runs is the caller's: `run(name,
folder)` returns the record, a JSON-able dict.
"""

import json
import os

from albert_tf.io_utils import atomic_file
from albert_tf.progress import Progress

RESULT_FILE = "result.json"


def say(line):
    print(line, flush=True)  # a log file shows each line when it happens


class VariantRunner:
    """The variants under `folder`, run at most once each.

    folder: the set's folder; variant `name` lives in `folder/name`.
    title: what the progress line counts ("seeds", "ablation grid").
    log: where the one-line messages go (a function of a string).
    """

    def __init__(self, folder, title="variants", log=say):
        self.folder, self.title, self.log = folder, title, log

    def path(self, name):
        return os.path.join(self.folder, name)

    def record(self, name):
        """The record of a done variant, else None."""
        path = os.path.join(self.path(name), RESULT_FILE)
        if not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8") as f:
            return json.load(f)

    def save(self, name, record):
        """Marks variant `name` done with `record` (atomically)."""
        with atomic_file(os.path.join(self.path(name), RESULT_FILE), encoding="utf-8") as f:
            json.dump(record, f, indent=2, sort_keys=True)
        return record

    def run_one(self, name, run):
        """The record of variant `name`: read back if done, else `run(name, folder)`
        saved as its record."""
        record = self.record(name)
        if record is None:
            os.makedirs(self.path(name), exist_ok=True)
            record = self.save(name, run(name, self.path(name)))
        return record

    def run_all(self, names, run, stop_after=None):
        """Runs every variant of `names` not done before (at most `stop_after` of
        them); returns `{name: record or None}` in the order of `names` (None:
        not run yet)."""
        records = {name: self.record(name) for name in names}
        for i, name in enumerate(names, start=1):
            if records[name] is not None:
                self.log(f"[{i}/{len(names)}] {name}: done before")
        pending = [n for n in names if records[n] is None][:stop_after]
        # The rate and ETA count only the variants this start runs.
        with Progress(len(pending), self.title, "done", interval=0) as progress:
            for name in pending:
                self.log(f"[{names.index(name) + 1}/{len(names)}] {name}")
                records[name] = self.run_one(name, run)
                progress.update()
        left = sum(r is None for r in records.values())
        if left:
            self.log(f"stopped with {left} variant(s) to go; run again to continue")
        return records
