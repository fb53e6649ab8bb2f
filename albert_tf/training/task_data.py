"""What a fine-tuning run hands its task: the data of a split, and what a split is scored from.

The run (`finetuning.Run`, an export's `--eval_data`) builds these of plain
data and passes them to the task's `tune_head`, `evaluate` and
`write_predictions`; the task takes back nothing but its results, so it never
holds the run (`tasks.base.Task`).
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class SplitData:
    """What a task scores or predicts from, of one split: its `examples` (as
    `read_examples` gave them), their `features`, and the model's `outputs` on
    them (name -> array, one row per feature row); None for both when the split
    has no examples."""

    name: str
    examples: object
    features: object
    outputs: dict


@dataclasses.dataclass(frozen=True)
class Scoring:
    """What the run hands a task to evaluate a split or write its predictions.

    split: the `SplitData` scored (or predicted).
    helpers: `{name: SplitData}` of the task's `helper_splits` (e.g. the
        training rows held out to choose a threshold).
    head: the model's head config (`model.head_config()`, with any update
        `tune_head` returned applied).
    output_dir: where the task writes its files (prediction files, reports).
    tokenizer: the run's host tokenizer.
    decode: the model's own decoding of its outputs (a CRF's Viterbi:
        `(logits, mask) -> ids`), or None.
    step: the update step of the weights scored (None outside a training run).
    """

    split: SplitData
    helpers: dict
    head: dict
    output_dir: str
    tokenizer: object = None
    decode: object = None
    step: int | None = None
