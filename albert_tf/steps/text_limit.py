"""Cutting raw text in the graph, before tokenization, to what can reach the model.

Tokenizing a text costs memory in proportion to its characters, and a
signature only ever uses a text's first `tokens` tokens (its last, for a
multiple-choice question-choice): the rest is cut first, so that a request's
peak memory grows with its rows, not with its longest text.

The limit is counted in characters weighed by what they can spell. With `P`
the most characters one token of the vocabulary spells (`max_token_chars`:
16 for ALBERT's English SentencePiece model, 30 for the Chinese BERT
WordPiece vocabulary), a text keeps the characters before weight
`(tokens + 1) * P` is reached, where whitespace weighs 0 (a run of it makes no
token), a CJK ideograph or punctuation mark weighs `P` for WordPiece (BERT's
BasicTokenizer makes each a word: at least one token) and every other
character 1; and at most `8 * (tokens + 1) * P` characters in all (a text
mostly of whitespace); for WordPiece, at least 201 (a word of more than 200
characters is one unknown token: a cut one stays that long). Why the cut
changes no token that reaches the model:
each of those tokens spells at most `P` of the characters counted, so the kept
characters give at least `tokens + 1` tokens, and a cut can only change the
tokens of the word it falls in, of which the last token (at most `P`
characters) is the one past `tokens`. Exceptions, documented in SERVING.md:
the unknown token (a WordPiece word the vocabulary cannot spell, or one run of
characters SentencePiece does not know, is one token of any length: it stays
one token, but its end offset becomes the cut), and characters normalization
drops or merges (control characters, combining marks), which weigh 1 here and
spell nothing. And SentencePiece's unigram segmentation is decided over
a whole word: a cut inside a single word longer than the limit may change how
that word is split from its start on (WordPiece's greedy split is left to right).
"""

import tensorflow as tf

from albert_tf.steps.words import standalone

# Unicode White_Space code points.
WHITESPACE = ((9, 13), (32, 32), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680),
               (0x2000, 0x200A), (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F),
               (0x3000, 0x3000))
# A text keeps at most this many times its limit in characters of any kind (a
# text mostly of whitespace, which weighs nothing).
WHITESPACE_CAP = 8
# A windowed text (SQuAD contexts, token classification) is read up to this
# many times max_seq_length tokens.
WINDOWED_LENGTHS = 8


def rules(tokenizer):
    """The JSON-able parameters of `cut` for `tokenizer` (what a client needs to cut as here)."""
    return {"max_token_chars": int(tokenizer.max_token_chars),
            "max_word_chars": tokenizer.max_word_chars and int(tokenizer.max_word_chars),
            "standalone_words": bool(tokenizer.standalone_words),
            "whitespace": [list(r) for r in WHITESPACE], "whitespace_cap": WHITESPACE_CAP,
            "windowed_lengths": WINDOWED_LENGTHS}


def char_limit(tokenizer, tokens):
    """The weight a text is cut at so that its first (or last) `tokens` tokens are kept."""
    # Beyond BERT's word limit a WordPiece word is one unknown token: a word cut
    # must stay beyond it.
    return max((int(tokens) + 1) * tokenizer.max_token_chars,
               (tokenizer.max_word_chars or 0) + 1)


def cut(text, tokenizer, tokens, keep="first"):
    """`text` string `(batch,)`, each row cut to the characters that give its
    first (`keep="first"`) or last (`"last"`) `tokens` tokens (module docstring).

    A row that is not cut is returned as given; a cut row is re-encoded, with
    invalid UTF-8 as U+FFFD (as the tokenizers read it), so that code point
    offsets into it are offsets into the given text.
    """
    limit = char_limit(tokenizer, tokens)
    codes = tf.strings.unicode_decode(text, "UTF-8", errors="replace",
                                      replacement_char=0xFFFD)  # ragged (batch, chars)
    flat = codes.flat_values
    space = tf.zeros_like(flat, dtype=tf.bool)
    for lo, hi in WHITESPACE:
        space |= (flat >= lo) & (flat <= hi)
    weight = tf.where(space, 0, 1)
    if tokenizer.standalone_words:
        weight = tf.where(standalone(flat), tokenizer.max_token_chars, weight)
    row = tf.cast(codes.value_rowids(), tf.int32)
    starts = tf.cast(codes.row_starts(), tf.int32)
    lengths = tf.cast(codes.row_lengths(), tf.int32)
    total = tf.cumsum(weight)
    before_row = tf.gather(tf.concat([[0], total], 0), starts)  # (batch,)
    before = total - weight - tf.gather(before_row, row)  # weight before each char, in its row
    position = tf.range(tf.size(flat)) - tf.gather(starts, row)
    if keep == "first":
        kept = (before < limit) & (position < WHITESPACE_CAP * limit)
    else:
        row_weight = tf.math.unsorted_segment_sum(weight, row, tf.size(lengths))  # (batch,)
        after = tf.gather(row_weight, row) - before - weight  # weight after each char
        from_end = tf.gather(lengths, row) - 1 - position
        kept = (after < limit) & (from_end < WHITESPACE_CAP * limit)
    was_cut = tf.math.unsorted_segment_min(tf.cast(kept, tf.int32), row, tf.size(lengths)) < 1
    shorter = tf.strings.unicode_encode(
        tf.ragged.boolean_mask(codes, codes.with_flat_values(kept)), "UTF-8")
    return tf.where(was_cut, shorter, text)
