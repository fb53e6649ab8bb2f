"""The options classes of the tasks whose modules import TensorFlow (SQuAD, CMRC
2018, multiple choice, token classification; SQuAD v2.0's export options), here
so that a command defines their flags and checks their values without importing it.

The other tasks' options are in light modules of their own
(`tasks.long_inputs.LongInputOptions`, `tasks.user_files.FileOptions`,
`tasks.text_classification_data.TextOptions`); `tasks.DECLARED` names each
task's class.
"""

import dataclasses

from albert_tf.settings import POSITIVE, Settings, redefault, setting
from albert_tf.tasks.user_files import FileOptions

# The question-answering heads: "span" (start/end logits; no answer is the
# [CLS] span, `AlbertSpanQA`) and "beam" (ALBERT's SQuAD v2.0 head: a beam of
# starts and ends and an answerability logit from [CLS], `AlbertBeamQA`).
QA_HEADS = ("beam", "span")
ALBERT_MAX_QA_LENGTH = 128  # run_race.py's --max_qa_length
MODEL_SCHEMES = ("auto", "iob2", "bioes")


@dataclasses.dataclass(frozen=True, kw_only=True)
class SquadOptions(Settings):
    doc_stride: int = setting(128, "SQuAD: tokens between window starts.", rule=POSITIVE)
    max_query_length: int = setting(64, "SQuAD: longest question in tokens.", rule=POSITIVE)
    n_best_size: int = setting(20, "SQuAD: candidate spans kept per question.", rule=POSITIVE)
    max_answer_length: int = setting(30, "SQuAD: longest answer in tokens.", rule=POSITIVE)
    qa_head: str = setting("beam", "squad_v2: ALBERT's own beam head, or the plain span head "
                           "(v1.1 always uses the span head).", choices=QA_HEADS)
    start_n_top: int = setting(5, "squad_v2 beam head: start positions in the beam.",
                               rule=POSITIVE)
    end_n_top: int = setting(5, "squad_v2 beam head: ends per start in the beam.",
                             rule=POSITIVE)


@dataclasses.dataclass(frozen=True, kw_only=True)
class SquadExportOptions(Settings):
    """What a SQuAD v2.0 export takes (the export command's flags)."""

    null_threshold: float | None = setting(
        None, "SQuAD v2.0: answer \"\" above these null odds (default: the run's held-out "
        "threshold from eval_results.json, else 0).")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Cmrc2018Options(SquadOptions):
    # CLUE's CMRC 2018 baseline (models_pytorch/mrc_pytorch/run_mrc.py --max_ans_length):
    # answers are counted in characters, and many are longer than SQuAD's.
    max_answer_length: int = redefault(SquadOptions, "max_answer_length", 50)
    qa_head: str = redefault(SquadOptions, "qa_head", "span")

    def checks(self):
        return (*super().checks(),
                ("qa_head", self.qa_head == "span",
                 "span for cmrc2018 (every question has an answer)"))


@dataclasses.dataclass(frozen=True, kw_only=True)
class ChoiceOptions(Settings):
    max_qa_length: int = setting(
        ALBERT_MAX_QA_LENGTH, "Multiple choice: the question with a choice keeps its last this "
        "many tokens (run_race.py's max_qa_length); the context is truncated first.",
        rule=POSITIVE)


@dataclasses.dataclass(frozen=True, kw_only=True)
class MultipleChoiceOptions(FileOptions, ChoiceOptions):
    pass


@dataclasses.dataclass(frozen=True, kw_only=True)
class TokenOptions(FileOptions):
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
