"""The options of token classification (its `finetune` flags), light."""

import dataclasses

from albert_tf.settings import setting
from albert_tf.tasks.losses import LossOptions
from albert_tf.tasks.user_files import FileOptions

MODEL_SCHEMES = ("auto", "iob2", "bioes")


@dataclasses.dataclass(frozen=True, kw_only=True)
class TokenOptions(FileOptions, LossOptions):
    tag_scheme: str = setting("auto", "Token classification: the tagging scheme the model "
                              "predicts (auto: IOB2, or BIOES for a BIOES training file).",
                              choices=MODEL_SCHEMES)
    crf: bool = setting(False, "Token classification: a linear-chain CRF over the word tags "
                        "(Viterbi decoding, also in the exported graph).")
    scheme_errors: str = setting("repair", "Token classification: tag sequences that break "
                                 "their file's scheme are read as conlleval reads them "
                                 "(repair) or stop the run (error).",
                                 choices=("repair", "error"))
    entity_tags: str = setting("", "Token classification: the model's tags, comma-separated "
                               "in class order (read from --train_file when empty, and "
                               "recorded with the model).")

    def checks(self):
        return (*super().checks(),
                (not (self.crf and self.loss_chosen()),
                 f"crf: a CRF is trained by the tag sequence's log-likelihood, which takes no "
                 f"--loss=focal or --label_smoothing (got loss={self.loss}, "
                 f"label_smoothing={self.label_smoothing}); they are the softmax head's"))
