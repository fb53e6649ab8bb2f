"""Words of raw text, and entities of word tags: the token classification steps.

Featurization runs them eagerly on batches of a split's texts, the token
classifier's serving graph (`albert_tf.export.token_classification`) in its
graph, and the text cuts (`text_limit`) weigh characters with `standalone`.

A token begins a new word (`graph_word_starts`) when it is the text's first,
and, unless the token before spells no character (SentencePiece's lone "▁",
which is one word with the token after it: no word has an empty span), when
whitespace or dropped characters separate it from the token before, or when
the character on either side of the boundary is a CJK ideograph or
punctuation; tokens that share characters (one character normalized into
several tokens) are one word. For WordPiece this gives BERT's words
(whitespace, punctuation and CJK characters apart). Entities are read from
word tags by conlleval's rules (`read_entities`).
"""

import tensorflow as tf

# BERT's CJK ideograph blocks (`tokenization._is_chinese_char`).
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
              (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
# BERT's punctuation (`tokenization._is_punctuation`): these ASCII ranges and
# the Unicode P* categories.
ASCII_PUNCTUATION = ((33, 47), (58, 64), (91, 96), (123, 126))
PREFIX_CODES = {"O": 0, "B": 1, "I": 2, "E": 3, "S": 4}


def standalone(codes):
    """Whether int32 code points (any shape) are words by themselves: a CJK
    ideograph or punctuation; -1 (no character) is not."""
    hit = tf.zeros_like(codes, dtype=tf.bool)
    for lo, hi in CJK_RANGES + ASCII_PUNCTUATION:
        hit |= (codes >= lo) & (codes <= hi)
    # The regular expression runs once per distinct character (a text has few).
    distinct, index = tf.unique(tf.reshape(tf.where(codes < 0, 32, codes), [-1]))
    chars = tf.strings.unicode_encode(distinct[:, None], "UTF-8")
    punctuation = tf.gather(tf.strings.regex_full_match(chars, r"\p{P}"), index)
    return hit | tf.reshape(punctuation, tf.shape(codes))


def graph_word_starts(chars, starts, ends):
    """Whether each token begins a word (the rule of the module docstring).

    Featurization runs it eagerly on batches of a split's texts, serving in
    its graph. It works on the flat values, so that its memory grows with
    the batch's tokens and characters, not with its longest text.

    Args:
        chars: int32 code points, ragged `(batch_size, None)`.
        starts, ends: int32 code point spans of the tokens into their text,
            ragged `(batch_size, None)`.

    Returns:
        bool, ragged `(batch_size, None)` as `starts`.
    """
    s, e = starts.flat_values, ends.flat_values  # (tokens,)
    row = starts.value_rowids()
    token_splits = tf.cast(starts.row_splits, tf.int64)
    first = tf.range(tf.size(s, out_type=tf.int64)) == tf.gather(token_splits, row)
    prev_end = tf.concat([[0], e], 0)[:-1]
    prev_empty = tf.concat([[False], tf.equal(s, e)], 0)[:-1]
    codes = tf.concat([tf.cast(chars.flat_values, tf.int32), [-1]], 0)  # -1: no character
    char_start = tf.gather(tf.cast(chars.row_splits, tf.int64), row)  # (tokens,)
    char_count = tf.gather(tf.cast(chars.row_lengths(), tf.int64), row)

    def char_at(index):
        index = tf.cast(index, tf.int64)
        inside = (index >= 0) & (index < char_count)
        return tf.gather(codes, tf.where(inside, char_start + index, tf.size(codes, tf.int64) - 1))

    joined = standalone(char_at(s)) | standalone(char_at(prev_end - 1))
    begins = first | (~prev_empty & ((s > prev_end) | ((s == prev_end) & joined)))
    return starts.with_flat_values(begins)


def word_spans(first, starts, ends):
    """Each word's code point span and text, flat in text order: `(start, end,
    row)` int32 `(words,)`; a word spans from its first token's start to the
    furthest end of its tokens. `first` is `graph_word_starts`'s result."""
    is_first = first.flat_values
    word_of_token = tf.cumsum(tf.cast(is_first, tf.int32)) - 1
    words = tf.where(is_first)[:, 0]
    end = tf.math.unsorted_segment_max(ends.flat_values, word_of_token, tf.shape(words)[0])
    row = tf.gather(tf.cast(first.value_rowids(), tf.int32), words)
    return tf.gather(starts.flat_values, words), end, row


def read_entities(tags, chars, word_start, word_end, word_row, word_tag):
    """The entities of word tags by conlleval's rules, per text, with their
    code point spans and text: serving's outputs, and the prediction files'.

    Args:
        tags: the tag names in class order ("O" or PREFIX-TYPE).
        chars: int32 code points of the texts, ragged `(batch_size, None)`.
        word_start, word_end, word_row: int32 `(words,)`, each word's span and
            text (`word_spans`), in text order.
        word_tag: int32 `(words,)`, each word's tag (an index into `tags`).

    Returns:
        dict: `num_entities` int32 `(batch_size,)`; `entity_type`,
        `entity_text` string and `entity_start`, `entity_end` int32
        `(batch_size, max_entities)` ("" and -1 padding).
    """
    types = sorted({t[2:] for t in tags if t != "O"})
    prefix = tf.gather(tf.constant([PREFIX_CODES[t[0]] for t in tags], tf.int32), word_tag)
    kind = tf.gather(tf.constant([0 if t == "O" else 1 + types.index(t[2:]) for t in tags],
                                 tf.int32), word_tag)
    same_text = tf.concat([[False], word_row[1:] == word_row[:-1]], 0)
    p_prefix = tf.where(same_text, tf.concat([[0], prefix[:-1]], 0), 0)
    p_kind = tf.where(same_text, tf.concat([[0], kind[:-1]], 0), 0)
    begins = (kind > 0) & ((prefix == 1) | (prefix == 4) | (p_prefix == 0)
                           | (p_prefix >= 3) | (p_kind != kind))
    entity = tf.cumsum(tf.cast(begins, tf.int32)) - 1
    count = tf.reduce_sum(tf.cast(begins, tf.int32))
    member = tf.where(kind > 0)[:, 0]
    start = tf.math.unsorted_segment_min(tf.gather(word_start, member),
                                         tf.gather(entity, member), count)
    end = tf.math.unsorted_segment_max(tf.gather(word_end, member),
                                       tf.gather(entity, member), count)
    heads = tf.where(begins)[:, 0]
    owner = tf.gather(word_row, heads)
    clean = tf.strings.unicode_encode(chars, "UTF-8")
    surface = tf.strings.substr(tf.gather(clean, owner), start, end - start, unit="UTF8_CHAR")
    rows = tf.cast(chars.nrows(), tf.int32)

    def per_text(values, default):
        return tf.RaggedTensor.from_value_rowids(values, owner, nrows=rows).to_tensor(default)

    type_names = tf.constant([""] + types)
    return {"num_entities": tf.math.bincount(owner, minlength=rows, maxlength=rows,
                                             dtype=tf.int32),
            "entity_type": per_text(tf.gather(type_names, tf.gather(kind, heads)), ""),
            "entity_text": per_text(surface, ""),
            "entity_start": per_text(start, -1), "entity_end": per_text(end, -1)}
