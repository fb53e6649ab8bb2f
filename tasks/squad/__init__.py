"""Extractive question answering: SQuAD v1.1 (`squad`), v2.0 (`squad_v2`) and CMRC 2018.

`task` registers SQuAD (options, model, evaluation, serving module) and
`cmrc2018` CMRC 2018, whose files and metric are its own and whose windows,
head, decoding and serving are SQuAD v1.1's; `data` reads the JSON files and
featurizes questions into sliding windows; `postprocess` decodes with the
served model's functions (`albert_tf.steps.squad_decode`), lists the n-best
answers and writes the official prediction files; `evaluate` and
`cmrc2018_evaluate` are the official scorings (`python -m
albert_tf.tasks.squad.evaluate`, `python -m albert_tf.tasks.squad.cmrc2018_evaluate`,
without TensorFlow).
"""

from albert_tf import datasets
from albert_tf.tasks.base import Declared, recipes_file
from albert_tf.tasks.squad.options import Cmrc2018Options, SquadExportOptions, SquadOptions

_RECIPES = recipes_file(__file__)

DECLARED = (
    Declared("squad", f"{__name__}.task", SquadOptions, recipes=_RECIPES,
             data_folder="the folder of train-v1.1.json and dev-v1.1.json",
             data_source=datasets.squad_source("squad", "1.1")),
    Declared("squad_v2", f"{__name__}.task", SquadOptions, SquadExportOptions,
             recipes=_RECIPES, data_folder="the folder of train-v2.0.json and dev-v2.0.json",
             data_source=datasets.squad_source("squad_v2", "2.0")),
    # CLUE's archive, not SQuAD's: its files and metric are its own.
    Declared("cmrc2018", f"{__name__}.cmrc2018", Cmrc2018Options, recipes=_RECIPES,
             data_folder="the folder of train.json, dev.json, trial.json and test.json",
             data_source=datasets.clue_source("cmrc2018")),
)
