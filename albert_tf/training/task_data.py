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


@dataclasses.dataclass(frozen=True)
class Collapse:
    """What a task says of a model whose predictions on a split have collapsed
    (`tasks.base.Task.collapse`): all one class, one constant, no entity.

    split: the split scored. what: the finding, a phrase ("every one of the 277
    predictions is 'not_entailment'"). figures: the numbers behind it beside the
    baseline's (`{"accuracy": 0.527, "baseline_accuracy": 0.527}`).
    """

    split: str
    what: str
    figures: dict

    def to_dict(self):
        return dataclasses.asdict(self)

    def describe(self):
        """`<what> on <split> (<figures>)`: the finding in a line's words."""
        shown = ", ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}"
                          for k, v in self.figures.items())
        return f"{self.what} on {self.split}" + (f" ({shown})" if shown else "")

