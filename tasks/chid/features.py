"""CHID's features: each blank's rows as CLUE's baseline packs them.

`[CLS] idiom [SEP] left context [unused1] right context [SEP]`, one row per
candidate, in one segment, the passage's other blanks as four `[MASK]`s, the
context a window centred on the blank (`albert_tf.steps.cloze`, which says
how; `CHID_preprocess.convert_examples_to_features` in CLUEbenchmark/CLUE).
The passage is first rewritten as the baseline rewrites it (`REPLACEMENTS`).
A vocabulary without `[unused1]` (ALBERT's English SentencePiece model) reads
the blank as its unknown token, which no other position of a passage is
made of on purpose.

Featurization runs the serving graph's steps eagerly: `blank_texts` and
`join_blanks` on batches of distinct passages (each tokenized once, on the
host), `ClozePacker.windows` on their blanks, and the packer over the
(blank, candidate) rows through the multiple-choice tasks' `pack_choices`.
"""

import numpy as np

from albert_tf.tasks.chid.data import BLANK
from albert_tf.tasks.multiple_choice.task import encode_distinct, pack_choices

# The baseline's rewriting of a passage before tokenization, in its order:
# curly quotes to straight ones, dashes to hyphens, the ellipsis to three dots.
REPLACEMENTS = (("\u201c", '"'), ("\u201d", '"'), ("\u2014\u2014", "--"), ("\u2014", "-"),
                ("\u2015", "-"), ("\u2026", "..."), ("\u2018", "'"), ("\u2019", "'"))
BLANK_TOKEN = "[unused1]"
# The [MASK]s another blank of the passage reads as: CHID's idioms are four characters.
MASK_WIDTH = 4
# Passages per eager call of the text steps.
BATCH_PASSAGES = 4096


def cloze_packer(tokenizer, max_seq_length):
    """The `ClozePacker` of `tokenizer` (host or in-graph: they share their ids)."""
    from albert_tf.steps.cloze import ClozePacker

    return ClozePacker(max_seq_length, tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id,
                       tokenizer.mask_id, tokenizer.piece_to_id(BLANK_TOKEN), MASK_WIDTH)


def _utf8(texts):
    return [t.encode("utf-8", "surrogatepass") for t in texts]  # decoded back, unchanged


def passage_ids(passages, tokenizer):
    """`(ids, positions)` of `passages` (`join_blanks`' ragged forms), each text
    between blanks tokenized by the host `tokenizer`."""
    import tensorflow as tf

    from albert_tf.data.mapped import ragged_rows
    from albert_tf.steps.cloze import blank_texts, join_blanks

    texts, _ = blank_texts(tf.constant(_utf8(passages), tf.string, [len(passages)]), BLANK,
                           REPLACEMENTS)
    pieces = [t.decode("utf-8", "surrogatepass") for t in texts.flat_values.numpy()]
    ids = ragged_rows(encode_distinct(tokenizer, pieces))
    return join_blanks(tf.RaggedTensor.from_row_lengths(ids, texts.row_lengths()))


def blank_windows(examples, tokenizer, packer, longest):
    """Each example's window (`ClozePacker.windows`), ragged `(N, None)`, its
    passage tokenized once with the other examples of that passage."""
    import tensorflow as tf

    passages = list(dict.fromkeys(e.passage for e in examples))
    where = {p: i for i, p in enumerate(passages)}
    passage = np.array([where[e.passage] for e in examples], np.int64)
    ordinal = np.array([e.ordinal for e in examples], np.int64)
    parts, order = [], []
    for begin in range(0, len(passages), BATCH_PASSAGES):
        ids, positions = passage_ids(passages[begin:begin + BATCH_PASSAGES], tokenizer)
        inside = np.flatnonzero((passage >= begin) & (passage < begin + BATCH_PASSAGES))
        rows = passage[inside] - begin
        position = tf.gather(positions.flat_values,
                             tf.gather(positions.row_starts(), rows) + ordinal[inside])
        parts.append(packer.windows(tf.gather(ids, rows), position,
                                    tf.constant(longest[inside], tf.int32)))
        order.append(inside)
    if not parts:
        return tf.ragged.constant([], tf.int32, ragged_rank=1)
    # Back to the examples' order.
    return tf.gather(tf.concat(parts, 0), np.argsort(np.concatenate(order), kind="stable"))


def encode_blanks(examples, tokenizer, max_seq_length):
    """The arrays of `examples` (`data.Blank`s), padded to their most candidates C:
    `token_ids`, `segment_ids` int32 `(N, C, max_seq_length)`, `choice_lengths`
    int32 `(N, C)`, and the longest row of each blank `(N,)`
    (`multiple_choice.task.pack_choices`)."""
    import tensorflow as tf

    from albert_tf.data.mapped import ragged_rows

    packer = cloze_packer(tokenizer, max_seq_length)
    candidates = list(dict.fromkeys(c for e in examples for c in e.choices))
    where = {c: i for i, c in enumerate(candidates)}
    # The kept ids of every distinct candidate, and an empty row for padded slots.
    kept = packer.candidates(ragged_rows(encode_distinct(tokenizer, candidates) + [[]]))
    kept_lengths = kept.row_lengths().numpy()
    counts = [len(e.choices) for e in examples]
    width = max(counts, default=0)
    index = np.array([[where[c] for c in e.choices] + [len(candidates)] * (width - len(e.choices))
                      for e in examples], np.int64).reshape(len(examples), width)
    longest = kept_lengths[index].max(axis=1, initial=0)
    windows = blank_windows(examples, tokenizer, packer, longest)

    def pack(blank, candidate):
        return packer(tf.gather(kept, candidate), tf.gather(windows, blank))

    rows = (tf.constant(np.repeat(np.arange(len(examples)), width)),
            tf.constant(index.reshape(-1)))
    return pack_choices(pack, rows, counts, max_seq_length, tokenizer.pad_id)
