"""`AblationSettings`: what an ablation grid reads (no TensorFlow import)."""

import dataclasses

from albert_tf.ablation.grid import SENTENCE_TASKS
from albert_tf.pretraining.documents import INPUT_FORMATS
from albert_tf.pretraining.instances import RANDOM_B, SINGLE_SENTENCES
from albert_tf.settings import (NON_NEGATIVE, OPEN_PROBABILITY, POSITIVE, POSITIVE_REAL,
                                PROBABILITY, Settings, setting)
from albert_tf.training.settings import OPTIMIZERS, PRECISIONS

SETTINGS_FILE = "ablation_settings.json"


@dataclasses.dataclass(frozen=True, kw_only=True)
class AblationSettings(Settings):
    """A grid of pretraining runs under one budget, scored alike.

    Exactly one budget is given: `budget_steps` (updates), `budget_tokens`
    (sequence positions seen: steps = tokens / (batch_size * max_seq_length),
    rounded up) or `budget_seconds` (each variant's steps = its own step rate,
    timed on a few updates before it trains, times the seconds; the schedule
    needs the step count up front).
    """

    output_dir: str = setting(help="The grid's folder: data/, one folder per variant, the "
                              "table and the plots.", roles=("writes",))
    corpus: str = setting(help="Text files (comma-separated globs) to pretrain on; a share "
                          "of each (--heldout_fraction) is held out for evaluation.")
    vocab_file: str = setting(help="The vocabulary (e.g. a SentencePiece .model).",
                              aliases=("spm_model",), roles=("reads",))
    input_format: str = setting("prose", "lines or prose (see create_pretraining_data).",
                                choices=INPUT_FORMATS)
    model: str = setting("albert_base", "The base model (a preset or a config file) that "
                         "the grid's axes change.", roles=("reads",))
    grid: str = setting("", "The variants: 'sharing=all,none;sentence_task=nsp,sop | seed=2' "
                        "(keys: sharing, embedding_dim, num_layers, hidden_dim, "
                        "sentence_task, seed; '|' joins sub-grids).")
    sentence_task: str = setting("sop", "The sentence task of variants the grid does not set.",
                                 choices=SENTENCE_TASKS)
    seed: int = setting(12345, "Seed of variants the grid does not set: initialisation, "
                        "dropout and data order.", rule=NON_NEGATIVE)
    data_seed: int = setting(12345, "Seed of the pretraining data (the same for every "
                             "variant).", rule=NON_NEGATIVE)
    # The budget.
    budget_steps: int | None = setting(None, "Updates per variant.", rule=POSITIVE)
    budget_tokens: int | None = setting(None, "Sequence positions per variant.",
                                        rule=POSITIVE)
    budget_seconds: float | None = setting(None, "Training seconds per variant.",
                                           rule=POSITIVE_REAL)
    # Pretraining.
    max_seq_length: int = setting(128, "Tokens per pretraining sequence.", rule=POSITIVE)
    max_predictions_per_seq: int = setting(20, "Masked positions per sequence.",
                                           rule=POSITIVE)
    dupe_factor: int = setting(2, "Passes over the corpus when making the data.",
                               rule=POSITIVE)
    single_sentence: str = setting(
        RANDOM_B, "Training pairs from a one-sentence chunk: random_b: B from a random other "
        "document, label 1 in both tasks (the reference's sampling, common at short "
        "--max_seq_length; a sentence head can learn that shape instead of its task); "
        "split: the sentence cut at a random word boundary, labelled like any pair. "
        "Held-out pairs are always cut so.", choices=SINGLE_SENTENCES)
    heldout_fraction: float = setting(0.05, "Share of each corpus file held out (its end).",
                                      rule=OPEN_PROBABILITY)
    batch_size: int = setting(32, "Pretraining batch size.", rule=POSITIVE)
    learning_rate: float = setting(1e-3, "Peak pretraining learning rate.", rule=POSITIVE_REAL)
    warmup_fraction: float = setting(0.1, "Share of the steps spent warming up.",
                                     rule=PROBABILITY)
    optimizer: str = setting("lamb", "Pretraining optimizer.", choices=OPTIMIZERS)
    precision: str = setting("fp32", "Precision of every run (one for all, so that "
                             "throughputs compare).", choices=PRECISIONS[1:])
    eval_batches: int = setting(20, "Held-out batches scored per variant and sentence task.",
                                rule=POSITIVE)
    eval_every: int | None = setting(
        None, "Also score each variant on held-out pairs of its own sentence task every N "
        "updates while it trains (held-out MLM accuracy for sentence_task=none): "
        "eval_history.jsonl in its pretrain/ folder, the latest on the progress line.",
        rule=POSITIVE)
    # Fine-tuning.
    finetune: str = setting("", "Tasks to fine-tune every variant on (e.g. rte,mrpc).")
    finetune_data_dir: str | None = setting(
        None, "A folder holding one data folder per task, named like the task (any case: "
        "glue/ for glue/RTE and glue/MRPC).")
    finetune_steps: int = setting(200, "Fine-tuning updates per task.", rule=POSITIVE)
    finetune_batch_size: int = setting(16, "Fine-tuning batch size.", rule=POSITIVE)
    finetune_learning_rate: float = setting(1e-4, "Fine-tuning peak learning rate.",
                                            rule=POSITIVE_REAL)
    finetune_max_seq_length: int = setting(128, "Fine-tuning sequence length.",
                                           rule=POSITIVE)
    stop_after: int | None = setting(None, "Run at most this many unfinished variants, then "
                                     "stop (the next start continues).", rule=POSITIVE)

    def checks(self):
        budgets = [b for b in (self.budget_steps, self.budget_tokens, self.budget_seconds)
                   if b is not None]
        return (
            ("output_dir", bool(self.output_dir), "a folder name"),
            ("corpus", bool(self.corpus), "text files or globs"),
            ("vocab_file", bool(self.vocab_file), "a vocabulary file"),
            (len(budgets) == 1, "give exactly one of --budget_steps, --budget_tokens and "
             f"--budget_seconds (got {len(budgets)})"),
            ("finetune_data_dir", not self.finetune or bool(self.finetune_data_dir),
             "a folder (with --finetune)"),
        )

    @property
    def finetune_tasks(self):
        return [t.strip() for t in self.finetune.split(",") if t.strip()]
