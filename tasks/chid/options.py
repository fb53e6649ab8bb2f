"""The options of `--task=chid` (its `finetune` flags), light."""

import dataclasses

from albert_tf.settings import setting
from albert_tf.tasks.losses import LossOptions

DECODINGS = ("global", "argmax")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ChidOptions(LossOptions):
    chid_decoding: str = setting(
        "global", "CHID: how a passage group's blanks are answered: global (CLUE's baseline: "
        "the best (blank, idiom) pair first, each idiom used once) or argmax (each blank "
        "alone). Evaluation reports both; this one is `accuracy`, the predictions and the "
        "export's answers.", choices=DECODINGS)
