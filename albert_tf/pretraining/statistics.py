"""The distribution of pretraining records: what two tools' outputs are compared on.

`record_statistics` reads only what every record holds, so it measures
albert_tf's records and google-research/albert's alike (read by
`records.read_records`, which takes both). It is how
`tests/test_pretraining_reference.py` holds the default sampling to the
reference's, and how the table in the README's "Pretraining" section was made.

Masked runs are counted in words (`masking.word_spans`, the reference's
words, `<unk>` among them): a run is a maximal sequence of masked words each
starting where the one before ends (`[SEP]` ends a run, unless a word
continues across it). Adjacent spans merge into one run, so runs longer than
`max_ngram` words occur. The words are the same in both tools' records (the
reference's `token_boundary` is `masking.token_boundary`, tested), so this
measures either by the words it masked.
"""

import numpy as np

from albert_tf.pretraining.documents import read_documents, tokenize_document
from albert_tf.pretraining.masking import word_spans

# The statistics, in the order of the comparison table, and what each is.
STATISTICS = {
    "instances_per_1k_tokens": "instances per 1,000 document tokens per pass",
    "full_length": "share of instances at max_seq_length",
    "mean_length": "real tokens per instance ([CLS]/[SEP] included)",
    "masked": "masked share of real tokens",
    "mask": "share of masked tokens shown as [MASK]",
    "random": "share of masked tokens shown as another token",
    "kept": "share of masked tokens shown unchanged",
    "runs_1": "share of masked runs of 1 word",
    "runs_2": "share of masked runs of 2 words",
    "runs_3": "share of masked runs of 3 words",
    "runs_4+": "share of masked runs of 4 or more words",
    "label_1": "share of label 1 (SOP: swapped or random B; NSP: random B)",
}


def masked_runs(original_ids, positions, tables):
    """Words per run of adjacent masked words in one sequence, int64 `(num_runs,)`.

    Args:
        original_ids: int `(seq_length,)`, unpadded, before masking.
        positions: the masked positions.
        tables: `masking.VocabularyTables`.
    """
    starts, ends, _ = word_spans(original_ids, tables)
    masked = np.zeros(len(original_ids), dtype=bool)
    masked[positions] = True
    words = np.flatnonzero(masked[starts])
    if not len(words):
        return np.zeros(0, np.int64)
    same_run = (np.diff(words) == 1) & (ends[words[:-1]] == starts[words[1:]])
    return np.bincount(np.concatenate([[0], np.cumsum(~same_run)]))


def record_statistics(records, tables, max_seq_length, document_tokens=None, passes=1):
    """The `STATISTICS` of a set of records.

    Args:
        records: `records.read_records`' dict (`token_ids`, `padding_mask`,
            `mask_positions`, `mask_ids`, `mask_weights`, `sop_label`).
        tables: `masking.VocabularyTables` of the vocabulary they were made with.
        max_seq_length: their sequence length.
        document_tokens: tokens of the text they were made from (see
            `corpus_tokens`); None leaves out `instances_per_1k_tokens`.
        passes: the `dupe_factor` they were made with.

    Returns:
        `{name: float}`, shares as fractions.
    """
    lengths = records["padding_mask"].sum(axis=1)
    real = records["mask_weights"] > 0  # (instances, predictions)
    rows, slots = np.nonzero(real)
    positions = records["mask_positions"][rows, slots]
    shown = records["token_ids"][rows, positions]
    labels = records["mask_ids"][rows, slots]
    original = records["token_ids"].copy()
    original[rows, positions] = labels
    runs = np.concatenate([np.zeros(0, np.int64)] + [
        masked_runs(original[i, :lengths[i]], records["mask_positions"][i][real[i]], tables)
        for i in range(len(lengths))])
    run_counts = np.bincount(np.minimum(runs, 4), minlength=5)[1:] / max(len(runs), 1)
    is_mask = shown == tables.mask_id
    is_kept = ~is_mask & (shown == labels)
    masked = max(len(shown), 1)
    out = {
        "full_length": float(np.mean(lengths == max_seq_length)),
        "mean_length": float(np.mean(lengths)),
        "masked": len(shown) / max(int(lengths.sum()), 1),
        "mask": is_mask.sum() / masked,
        "random": (~is_mask & ~is_kept).sum() / masked,
        "kept": is_kept.sum() / masked,
        **{f"runs_{n}": float(share) for n, share in zip(("1", "2", "3", "4+"), run_counts)},
        "label_1": float(np.mean(records["sop_label"])),
    }
    if document_tokens:
        out["instances_per_1k_tokens"] = len(lengths) / passes / (document_tokens / 1000)
    return {name: float(out[name]) for name in STATISTICS if name in out}


def corpus_tokens(paths, tokenizer, input_format):
    """Tokens of the documents of `paths` as `create_pretraining_data` reads them."""
    total = 0
    for sentences in read_documents(paths, input_format):
        document = tokenize_document(tokenizer, sentences)
        total += len(document.tokens) if document is not None else 0
    return total
