"""A run whose predictions collapsed: said in one line, and rescued by restarts.

ALBERT's fine-tuning sometimes ends at the majority class (every prediction the
same label), a constant regression or no entity at all, and nothing else says
so. The task knows what its predictions mean (`tasks.base.Task.collapse`, a
`task_data.Collapse` or None); the run asks it after the first evaluation past
warmup (`--eval_every`) and after the final evaluation, and says what it found
in one line with the figures, beside the baseline's.

`--collapse_restarts=N`: a collapsed run starts again from its initial weights
(the checkpoint, a new head) with another seed (`seed + 1000 x restart`), from
the third restart on at half the learning rate, at most N times. Each attempt
is a line of `<output_dir>/attempts.json` (`ATTEMPTS_FILE`): its seed, learning
rate and what collapsed; an attempt's checkpoints, history, best step and
TensorBoard events move to `attempts/attempt-K/` before the next one starts,
so a killed run resumes the attempt it was in. `eval_results.json` lists every
attempt (`attempts`) and the collapse of the last one, if it collapsed too
(`collapsed`).
"""

import dataclasses
import json
import os

from albert_tf.errors import RunStopped
from albert_tf.io_utils import atomic_file
from albert_tf.training.run_folder import (ATTEMPTS_DIR, ATTEMPTS_FILE, BEST_DIR, CHECKPOINT_DIR,
                                           HISTORY_FILE, TENSORBOARD_DIR)

SEED_STEP = 1000
HALVED_FROM = 3  # the restart from which the learning rate is halved
# What one attempt leaves that the next must not continue from.
ATTEMPT_FILES = (CHECKPOINT_DIR, HISTORY_FILE, BEST_DIR, TENSORBOARD_DIR)


class Collapsed(RunStopped):
    """The run collapsed and is restarted (raised out of training; `run` catches it)."""


def attempt_values(seed, learning_rate, restart):
    """`(seed, learning_rate)` of restart `restart` (0: the run as given)."""
    return (seed + SEED_STEP * restart,
            learning_rate / 2 if restart >= HALVED_FROM else learning_rate)


class Attempts:
    """The attempts of the run in `output_dir` of `settings`: read from
    `attempts.json` (none written yet: the first, the settings' own)."""

    def __init__(self, settings, chief=True):
        self.settings, self.chief = settings, chief
        self.path = os.path.join(settings.output_dir, ATTEMPTS_FILE)
        if os.path.isfile(self.path):
            with open(self.path, encoding="utf-8") as f:
                self.entries = json.load(f)["attempts"]
        else:
            self.entries = [self._entry(0)]

    def _entry(self, restart):
        seed, rate = attempt_values(self.settings.seed, self.settings.learning_rate, restart)
        return {"attempt": restart + 1, "seed": seed, "learning_rate": rate}

    @property
    def current(self):
        return self.entries[-1]

    @property
    def restarts_left(self):
        return self.settings.collapse_restarts - (len(self.entries) - 1)

    def varied(self):
        """The settings the current attempt changes (none for the first)."""
        entry = self.current
        if entry["attempt"] == 1:
            return {}
        return {"seed": entry["seed"], "learning_rate": entry["learning_rate"]}

    def _save(self):
        if self.chief:
            with atomic_file(self.path, encoding="utf-8") as f:
                json.dump({"attempts": self.entries}, f, indent=2)

    def record(self, step, collapse):
        """Records that the current attempt collapsed at `step` (`collapse`: the
        task's `Collapse`)."""
        self.current["collapsed"] = {"step": int(step), **collapse.to_dict()}
        self._save()

    def restart(self):
        """Starts the next attempt: recorded, then the current one's files moved aside."""
        self.current["archived"] = False
        self.entries.append(self._entry(len(self.entries)))
        self._save()
        self.archive()

    def archive(self):
        """Moves the files of an attempt not yet moved aside (a run killed while
        moving them finishes here) into `attempts/attempt-K/`."""
        for entry in self.entries[:-1]:
            if entry.get("archived", True):
                continue
            folder = os.path.join(self.settings.output_dir, ATTEMPTS_DIR,
                                  f"attempt-{entry['attempt']}")
            if self.chief:
                os.makedirs(folder, exist_ok=True)
                for name in ATTEMPT_FILES:
                    path = os.path.join(self.settings.output_dir, name)
                    if os.path.exists(path):
                        os.replace(path, os.path.join(folder, name))
            entry["archived"] = True
            self._save()

    def results(self):
        """Every attempt as `eval_results.json` lists them."""
        return [{k: v for k, v in e.items() if k != "archived"} for e in self.entries]


@dataclasses.dataclass
class CollapseWatch:
    """When a collapse counts and what follows it.

    attempts: the run's `Attempts`; check_step: the first evaluation while
    training past warmup (None: none); verdict: `step -> Collapse or None` of
    the evaluation at `step` (made again if it is not the latest); say: where
    the line goes (None: nowhere)."""

    attempts: Attempts
    check_step: int | None
    verdict: object
    say: object = None

    def after_evaluation(self, step):
        """After an evaluation while training: judged at `check_step` only."""
        if step == self.check_step:
            self.judge(step, self.verdict(step))

    def judge(self, step, collapse, at_end=False):
        """Says a collapse, records it, and restarts (raises `Collapsed`) while
        restarts are left; returns the collapse, or None."""
        if collapse is None:
            return None
        self.attempts.record(step, collapse)
        left, settings = self.attempts.restarts_left, self.attempts.settings
        where = "at the end" if at_end else "past warmup"
        line = f"collapsed at step {step} ({where}): {collapse.describe()}"
        if left > 0:
            seed, rate = attempt_values(settings.seed, settings.learning_rate,
                                        len(self.attempts.entries))
            line += (f"; restarting from the initial weights with seed {seed}, learning rate "
                     f"{rate:g} (restart {len(self.attempts.entries)} of "
                     f"{settings.collapse_restarts})")
        elif settings.collapse_restarts:
            line += f"; no restarts left (--collapse_restarts={settings.collapse_restarts})"
        else:
            line += "; --collapse_restarts=N restarts it with another seed"
        if self.say is not None:
            self.say(line)
        if left > 0:
            raise Collapsed(line)
        return collapse


def first_check_step(evaluation_steps, warmup_steps):
    """The first evaluation step past warmup, or None."""
    return next((s for s in sorted(evaluation_steps) if s > warmup_steps), None)
