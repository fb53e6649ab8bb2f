"""The options of the extractive question-answering tasks (their `finetune` and
`export` flags), light: a command checks them before TensorFlow loads."""

import dataclasses

from albert_tf.settings import POSITIVE, Settings, redefault, setting

# The question-answering heads: "span" (start/end logits; no answer is the
# [CLS] span, `AlbertSpanQA`) and "beam" (ALBERT's SQuAD v2.0 head: a beam of
# starts and ends and an answerability logit from [CLS], `AlbertBeamQA`).
QA_HEADS = ("beam", "span")


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
