"""`DataOptions`: the settings of a pretraining-data run, checked on construction.

Kept apart from `pipeline` (which loads TensorFlow) so that the CLI rejects
bad settings at once.
"""

import dataclasses

from albert_tf.pretraining.documents import INPUT_FORMATS
from albert_tf.pretraining.instances import InstanceOptions


@dataclasses.dataclass(frozen=True)
class DataOptions:
    """Settings of `create_pretraining_data`; invalid values raise `ValueError`.

    Defaults are the reference's, except `dupe_factor` (10, BERT's default;
    ALBERT's script used 40, which multiplies the output by 40).
    """

    input_format: str = "lines"
    max_seq_length: int = 512
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    max_ngram: int = 3
    dupe_factor: int = 10
    short_seq_prob: float = 0.1
    random_next_sentence: bool = False
    random_seed: int = 12345
    num_shards: int = 1
    document_window: int = 100
    shuffle_buffer: int = 10_000

    def __post_init__(self):
        checks = [
            ("input_format", self.input_format in INPUT_FORMATS, f"one of {INPUT_FORMATS}"),
            ("max_seq_length", self.max_seq_length >= 5, ">= 5 ([CLS] a [SEP] b [SEP])"),
            ("max_predictions_per_seq", 1 <= self.max_predictions_per_seq <= self.max_seq_length,
             "in [1, max_seq_length]"),
            ("masked_lm_prob", 0.0 < self.masked_lm_prob < 1.0, "in (0, 1)"),
            ("max_ngram", self.max_ngram >= 1, ">= 1"),
            ("dupe_factor", self.dupe_factor >= 1, ">= 1"),
            ("short_seq_prob", 0.0 <= self.short_seq_prob <= 1.0, "in [0, 1]"),
            ("random_seed", self.random_seed >= 0, ">= 0"),
            ("num_shards", self.num_shards >= 1, ">= 1"),
            ("document_window", self.document_window >= 1, ">= 1"),
            ("shuffle_buffer", self.shuffle_buffer >= 1, ">= 1"),
        ]
        for field, ok, want in checks:
            if not ok:
                raise ValueError(f"{field} must be {want}, got {getattr(self, field)!r}")

    def instance_options(self):
        return InstanceOptions(
            max_seq_length=self.max_seq_length,
            max_predictions_per_seq=self.max_predictions_per_seq,
            masked_lm_prob=self.masked_lm_prob, max_ngram=self.max_ngram,
            short_seq_prob=self.short_seq_prob, random_next_sentence=self.random_next_sentence)
