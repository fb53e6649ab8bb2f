"""`DataOptions`: the settings of a pretraining-data run, checked on construction.

Kept apart from `pipeline` (which loads TensorFlow) so that the CLI rejects
bad settings at once.
"""

import dataclasses

from albert_tf.pretraining.documents import INPUT_FORMATS
from albert_tf.pretraining.instances import SINGLE_SENTENCES, TARGET_LENGTHS, InstanceOptions
from albert_tf.pretraining.masking import NGRAM_PLACEMENTS

WHOLE_WORD_CHOICES = ("auto", "on", "off")
from albert_tf.settings import (CLOSED_PROBABILITY, NON_NEGATIVE, OPEN_PROBABILITY, POSITIVE,
                                Settings, at_least, setting)


@dataclasses.dataclass(frozen=True, kw_only=True)
class DataOptions(Settings):
    """Settings of `create_pretraining_data`; invalid values raise `ValueError`.

    Defaults are the reference's (google-research/albert
    `create_pretraining_data.py`), so that the data has its distribution,
    except `dupe_factor` (10, BERT's default; ALBERT's script used 40, which
    multiplies the output by 40). `target_length`, `single_sentence` and
    `ngram_placement` name the reference's sampling choices and an
    alternative to each (see `instances` and `masking`).
    """

    input_format: str = setting(
        "lines", "lines: one sentence per line, blank line between documents (the reference's "
        "format); prose: plain text (e.g. Gutenberg books), paragraphs split into sentences, "
        "a document per chapter.", choices=INPUT_FORMATS)
    max_seq_length: int = setting(512, "Tokens per instance, [CLS]/[SEP] included.",
                                  rule=at_least(5, "[CLS] a [SEP] b [SEP]"))
    max_predictions_per_seq: int = setting(20, "Most masked tokens per instance.")
    masked_lm_prob: float = setting(0.15, "Share of tokens to mask (before the cap).",
                                    rule=OPEN_PROBABILITY)
    max_ngram: int = setting(3, "Longest masked span in words; p(n) ~ 1/n.", rule=POSITIVE)
    dupe_factor: int = setting(10, "Passes over the corpus, each with new masks.", rule=POSITIVE)
    short_seq_prob: float = setting(0.1, "Probability of a shorter target length.",
                                    rule=CLOSED_PROBABILITY)
    random_next_sentence: bool = setting(
        False, "NSP-style negatives (B from another document) instead of SOP swaps.")
    target_length: str = setting(
        "per_document", "When the target length is drawn (see --short_seq_prob): "
        "per_document: once per document (the reference); per_chunk: anew for every segment "
        "pair, spreading the short inputs over all documents.", choices=TARGET_LENGTHS)
    single_sentence: str = setting(
        "random_b", "A chunk of one sentence (longer than the target, or a document's last): "
        "random_b: B from a random other document, label 1 even for SOP (the reference); "
        "split: the sentence cut at a random word boundary, labelled like any pair.",
        choices=SINGLE_SENTENCES)
    ngram_placement: str = setting(
        "per_start", "How masked n-grams are placed: per_start: n drawn for each start word in "
        "random order, the span shortened to the budget or skipped when it overlaps (the "
        "reference; spans may cross the middle [SEP]); fit_first: n drawn first, then placed "
        "where n whole words of one segment fit, realising p(n) ~ 1/n more closely.",
        choices=NGRAM_PLACEMENTS)
    whole_word_masking: str = setting(
        "auto", "Mask whole words of a segmenter's (jieba, as brightmart/albert_zh) in text of "
        "a Chinese vocabulary, n-grams counting those words: on, off, or auto (on for a "
        "Chinese WordPiece vocabulary); needs albert-tf[zh].", choices=WHOLE_WORD_CHOICES)
    jieba_dict: str | None = setting(
        None, "Whole-word masking: a user dictionary of jieba's (a word a line) for a "
        "domain's words.")
    random_seed: int = setting(12345, "Seed of every random choice.", rule=NON_NEGATIVE)
    num_shards: int = setting(1, "Output files (records go round-robin).", rule=POSITIVE)
    document_window: int = setting(
        100, "Documents held at once: read ahead (taken in random order) and the source of "
        "random documents.", rule=POSITIVE)
    shuffle_buffer: int = setting(10_000, "Records shuffled before writing.", rule=POSITIVE)

    def checks(self):
        return (("max_predictions_per_seq",
                 1 <= self.max_predictions_per_seq <= self.max_seq_length,
                 "in [1, max_seq_length]"),
                (self.jieba_dict is None or self.whole_word_masking != "off",
                 "jieba_dict is for whole-word masking, which whole_word_masking=off turns off"))

    def word_marks(self, tokenizer):
        """The tokens' whole-word marks (`VocabularyType.word_marks`, with jieba), or
        None: `whole_word_masking` off, or auto on a vocabulary that needs none."""
        from albert_tf.tokenizer.base import get_type

        if self.whole_word_masking == "off":
            return None
        from albert_tf.pretraining.segmenter import jieba_segmenter

        kind = get_type(tokenizer.vocabulary_type)
        segmenter = []  # loaded only for a vocabulary that asks for words
        marks = kind.word_marks(tokenizer, lambda text: segmenter[0](text))
        if marks is None and self.whole_word_masking == "on":
            raise ValueError(f"whole_word_masking=on: the {kind.name} vocabulary needs no "
                             "segmenter (only a Chinese WordPiece vocabulary does)")
        if marks is not None:
            segmenter.append(jieba_segmenter(self.jieba_dict))
        return marks

    def instance_options(self):
        return InstanceOptions(
            max_seq_length=self.max_seq_length,
            max_predictions_per_seq=self.max_predictions_per_seq,
            masked_lm_prob=self.masked_lm_prob, max_ngram=self.max_ngram,
            short_seq_prob=self.short_seq_prob, random_next_sentence=self.random_next_sentence,
            target_length=self.target_length, single_sentence=self.single_sentence,
            ngram_placement=self.ngram_placement)


@dataclasses.dataclass(frozen=True, kw_only=True)
class DataFiles(Settings):
    """What `create_pretraining_data` reads and writes (the sampling: `DataOptions`)."""

    input: tuple[str, ...] = setting(help="Comma-separated text files or globs (UTF-8).",
                                     roles=("reads",))
    vocab_file: str = setting(help="The vocabulary (e.g. ALBERT's 30k-clean.model), or a "
                              "local checkpoint folder that ships one.",
                              aliases=("spm_model",), roles=("reads",))
    output: str = setting(help="Output prefix: writes PREFIX-0000i-of-0000N.tfrecord.",
                          roles=("writes",))
    progress: bool = setting(True, help="Report progress on stderr.")
