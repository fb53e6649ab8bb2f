"""Sentence and sentence-pair classification and regression: GLUE and CLUE.

One spec-driven task (`task.SentenceTask`, as Model Garden's
`SentencePredictionTask`): each task is one row of `glue.SPECS` or
`clue.SPECS`, which gives its reader, labels, metrics and submission writer;
the head is `AlbertClassifier` on the pooled `[CLS]` output; long texts as
`tasks.long_inputs` says (`--long_inputs`).
"""

import dataclasses

from albert_tf import datasets
from albert_tf.tasks.base import Declared, recipes_file
from albert_tf.tasks.long_inputs import LongInputOptions
from albert_tf.tasks.losses import LossOptions

_MODULE = f"{__name__}.task"
_RECIPES = recipes_file(__file__)
# GLUE's folder of each task (what --data_dir names).
GLUE_FOLDERS = {"cola": "CoLA", "sst2": "SST-2", "mrpc": "MRPC", "stsb": "STS-B",
                "qqp": "QQP", "mnli": "MNLI", "qnli": "QNLI", "rte": "RTE", "wnli": "WNLI"}
CLUE_NAMES = ("afqmc", "tnews", "iflytek", "cmnli", "ocnli", "cluewsc2020", "csl")
REGRESSION = ("stsb",)  # a squared error: no classification loss options


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClassificationOptions(LongInputOptions, LossOptions):
    """The options of the classification tasks: long inputs and the loss."""


def _options(name):
    return LongInputOptions if name in REGRESSION else ClassificationOptions


def _glue_source(name, folder):
    # GLUE's archive has no MRPC data: Microsoft's files, split by GLUE's dev ids.
    if name == "mrpc":
        return datasets.mrpc_source(name, folder)
    return datasets.glue_source(name, folder)


DECLARED = (
    *(Declared(name, _MODULE, _options(name), recipes=_RECIPES,
               data_folder=f"the GLUE folder {folder}", data_source=_glue_source(name, folder))
      for name, folder in GLUE_FOLDERS.items()),
    *(Declared(name, _MODULE, _options(name), recipes=_RECIPES,
               data_folder="the folder of its train.json, dev.json and test.json",
               data_source=datasets.clue_source(name))
      for name in CLUE_NAMES),
)
