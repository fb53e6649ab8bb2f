"""`SearchSettings`: what a search reads beside the fine-tuning settings (no TensorFlow)."""

import dataclasses

from albert_tf.settings import POSITIVE, Settings, setting

SAMPLERS = ("tpe", "random", "grid")
SETTINGS_FILE = "search_settings.json"
# `auto`'s measurements of how to run the training step, shared by the trials'
# runs (`albert_tf.training.execution.PROBES_FILE_ENV`): measured once, alike for all.
PROBES_FILE = "execution_probes.json"


@dataclasses.dataclass(frozen=True, kw_only=True)
class SearchSettings(Settings):
    space: str = setting(
        help="The parameters searched, '|'-separated: name=low:high[:log] (a range) or "
        "name=a,b,c (a choice), of any fine-tuning setting, e.g. "
        "'learning_rate=1e-5:5e-5:log | batch_size=16,32 | num_epochs=2,3'.")
    trials: int = setting(10, "Trials to finish (a stopped search continues to this count).",
                          rule=POSITIVE)
    seeds_per_trial: int = setting(
        1, "Runs per trial, with seeds --seed, --seed+1, ...; a trial scores the mean of "
        "their dev metric.", rule=POSITIVE)
    sampler: str = setting("tpe", "Optuna's sampler: tpe (Bayesian), random, or grid (every "
                           "combination of the lists once; capped at --trials).",
                           choices=SAMPLERS)
    metric: str = setting("", "The dev metric trials are ranked by; default: the task's "
                          "primary metric.")
    prune: bool = setting(
        True, "Stop a trial early when its first seed's dev metric in eval_history.jsonl "
        "(written with --eval_every) is worse than the median of earlier trials at the same "
        "step (Optuna's median pruner).")

    def checks(self):
        return (("space", bool(self.space.strip()), "parameters, e.g. "
                 "'learning_rate=1e-5:5e-5:log | batch_size=16,32'"),)
