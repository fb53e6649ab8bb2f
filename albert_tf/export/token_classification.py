"""Serving a token classifier from raw text: entities with character offsets, and tags.

Words. The tag of a word is read from its first token. On raw text a token
begins a new word (`word_starts`, the same rule on the host and in the
graph) when it is the text's first, and, unless the token before spells no
character (SentencePiece's lone "▁", which is one word with the token after
it: no word has an empty span), when whitespace or dropped characters
separate it from the token before, or when the character on either side of
the boundary is a CJK ideograph or punctuation; tokens that share characters
(one character normalized into several tokens) are one word. For WordPiece
this gives BERT's words (whitespace, punctuation and CJK characters apart).

Windows. A text of more than `max_seq_length - 2` tokens is cut into
consecutive windows of that many tokens, each `[CLS] window [SEP]`
(`albert_tf.tokenizer.windows.consecutive_windows`, which featurizes the
task's training data too); the tags of all windows are put back in order.

`serving_default` takes `text` string `(batch_size,)` and returns, padded
per batch (use the counts):

- `num_entities` int32 (batch,); `entity_type`, `entity_text` string and
  `entity_start`, `entity_end` int32 (batch, max_entities): the type and the
  code point span `[start, end)` into the input text ("" and -1 padding).
  Entities are read from the word tags by conlleval's rules.
- `num_tokens` int32 (batch,); `token_tag` string (batch, max_tokens): the
  word's tag on its first token, "" on its other tokens and on padding;
  `token_start`, `token_end` int32: each token's code point span (-1 padding).
  Only tokens that spell a character are listed (a lone "▁" is not: no token
  has an empty span); a word's tag is then on its first listed token.

Invalid UTF-8 is read as U+FFFD (the tokenizers' rule); offsets and
`entity_text` then refer to that decoded text.
"""

import functools
import unicodedata

import tensorflow as tf

from albert_tf.export.base import ServingModule, padded_length
from albert_tf.tokenizer.windows import consecutive_windows

# BERT's CJK ideograph blocks (`tokenization._is_chinese_char`).
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
              (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
# BERT's punctuation (`tokenization._is_punctuation`): these ASCII ranges and
# the Unicode P* categories.
ASCII_PUNCTUATION = ((33, 47), (58, 64), (91, 96), (123, 126))
PREFIX_CODES = {"O": 0, "B": 1, "I": 2, "E": 3, "S": 4}


def is_standalone(char):
    """Whether `char` is a word by itself: a CJK ideograph or punctuation."""
    code = ord(char)
    if any(lo <= code <= hi for lo, hi in CJK_RANGES + ASCII_PUNCTUATION):
        return True
    return unicodedata.category(char).startswith("P")


def word_starts(text, starts, ends):
    """Host rule: for each token (code point spans `starts`, `ends` into
    `text`), whether it begins a word."""
    out = []
    for i, (start, end) in enumerate(zip(starts, ends)):
        if i == 0:
            out.append(True)
        elif starts[i - 1] == ends[i - 1]:
            out.append(False)  # after a token of no characters (a lone "▁"): one word
        elif start > ends[i - 1]:
            out.append(True)
        elif start < ends[i - 1]:
            out.append(False)  # overlapping spans: made from the same characters
        else:
            before = ends[i - 1] - 1
            out.append((start < len(text) and is_standalone(text[start]))
                       or (0 <= before < len(text) and is_standalone(text[before])))
    return out


def _graph_standalone(codes):
    """`is_standalone` of int32 code points (any shape); -1 (no character) is not."""
    hit = tf.zeros_like(codes, dtype=tf.bool)
    for lo, hi in CJK_RANGES + ASCII_PUNCTUATION:
        hit |= (codes >= lo) & (codes <= hi)
    flat = tf.reshape(tf.where(codes < 0, 32, codes), [-1, 1])
    chars = tf.strings.unicode_encode(flat, "UTF-8")
    punctuation = tf.reshape(tf.strings.regex_full_match(chars, r"\p{P}"), tf.shape(codes))
    return hit | punctuation


def graph_word_starts(chars, starts, ends):
    """`word_starts` in the graph: chars ragged int32 code points (batch, chars),
    starts/ends ragged (batch, tokens) -> ragged bool (batch, tokens)."""
    lengths = starts.row_lengths()
    s, e = starts.to_tensor(0), ends.to_tensor(0)  # (batch, tokens)
    codes = tf.concat([chars.to_tensor(-1), tf.fill([tf.shape(s)[0], 1], -1)], 1)
    last = tf.shape(codes)[1] - 1

    def char_at(index):
        found = tf.gather(codes, tf.clip_by_value(index, 0, last), batch_dims=1)
        return tf.where(index >= 0, found, -1)

    prev_end = tf.pad(e[:, :-1], [[0, 0], [1, 0]])
    prev_empty = tf.pad(tf.equal(s, e)[:, :-1], [[0, 0], [1, 0]])
    first = tf.range(tf.shape(s)[1])[None, :] == 0
    joined = _graph_standalone(char_at(s)) | _graph_standalone(char_at(prev_end - 1))
    begins = first | (~prev_empty & ((s > prev_end) | ((s == prev_end) & joined)))
    return tf.RaggedTensor.from_tensor(begins, lengths=lengths)


def _crf_scores(model):
    """The CRF's scores as float lists (None without a CRF)."""
    if model.crf is None:
        return None
    return {name: getattr(model.crf, name).numpy().astype("float32").tolist()
            for name in ("transitions", "start_scores", "end_scores")}


class TokenClassifierServing(ServingModule):
    """Raw-text signature of an `AlbertTokenClassifier` (see the module docstring).

    Args:
        model: the fine-tuned `AlbertTokenClassifier` (float32).
        tokenizer: its in-graph tokenizer (with `tokenize_with_offsets`).
        max_seq_length: the fine-tuning run's (window size + 2).
        tags: the tag names in class order ("O" or PREFIX-TYPE).
    """

    def __init__(self, model, tokenizer, max_seq_length, tags):
        super().__init__(model, tokenizer, max_seq_length, name="albert_token_serving")
        self.tags = tuple(tags)
        self._decode = functools.partial(model.decode)  # not tracked (see ServingModule)
        self._crf_scores = functools.partial(_crf_scores, model)  # not tracked
        types = sorted({t[2:] for t in self.tags if t != "O"})
        self._type_names = tf.constant([""] + types)
        self._tag_prefix = tf.constant([PREFIX_CODES[t[0]] for t in self.tags], tf.int32)
        self._tag_type = tf.constant([0 if t == "O" else 1 + types.index(t[2:])
                                      for t in self.tags], tf.int32)
        self.define_signatures(self._serve, ("text",))

    def decoding_settings(self):
        """Tags in class order, and the CRF's transition/start/end scores (None
        without one: each word's argmax)."""
        return {"kind": "token_classification", "inputs": ["text"], "tags": list(self.tags),
                "crf": self._crf_scores()}

    def _windows(self, ids, first):
        """Packed windows of ragged `ids`: model inputs, word mask, and each
        token's (row, column)."""
        windows = consecutive_windows(ids, self.max_seq_length, self.tokenizer.cls_id,
                                      self.tokenizer.sep_id, self.tokenizer.pad_id,
                                      [(first, False)])
        tokens, row_length, where = windows["token_ids"], windows["tokens"], windows["where"]
        word_mask = windows["values"][0]
        columns = tf.range(self.max_seq_length)[None, :]
        length = padded_length(row_length + 2, self.max_seq_length)
        inputs = {"token_ids": tokens[:, :length],
                  "segment_ids": tf.zeros_like(tokens[:, :length]),
                  "padding_mask": tf.cast(columns < row_length[:, None] + 2, tf.int32)[:, :length]}
        return inputs, word_mask[:, :length], where

    def _serve(self, text):
        from albert_tf.export import text_limit  # it uses this module's character classes

        # Texts are tagged up to their first WINDOWED_LENGTHS * max_seq_length tokens.
        text = text_limit.cut(text, self.tokenizer,
                              text_limit.WINDOWED_LENGTHS * self.max_seq_length)
        ids, starts, ends = self.tokenizer.tokenize_with_offsets(text)
        chars = tf.strings.unicode_decode(text, "UTF-8", errors="replace")
        first = graph_word_starts(chars, starts, ends)
        inputs, word_mask, where = self._windows(ids, first)
        logits = self.run_model_in_chunks(inputs)["logits"]
        tags = self._decode(logits, word_mask)  # (rows, length)
        token_tag = tf.gather_nd(tags, where)  # (tokens,) in text order
        outputs = self._entities(text, chars, first, starts, ends, token_tag)
        outputs.update(self._tokens(first, starts, ends, token_tag))
        return outputs

    def _tokens(self, first, starts, ends, token_tag):
        """The per-token outputs: the tokens that spell a character (a lone "▁"
        spells none and is left out), each word's tag on its first such token."""
        is_first = first.flat_values
        spells = ends.flat_values > starts.flat_values
        word_of_token = tf.cumsum(tf.cast(is_first, tf.int32)) - 1
        word_first = tf.where(is_first)[:, 0]
        before = tf.cumsum(tf.cast(spells, tf.int32), exclusive=True)  # kept tokens before
        # A word's first kept token: no kept token of its word comes before it.
        first_kept = spells & tf.equal(
            before, tf.gather(tf.gather(before, word_first), tf.maximum(word_of_token, 0)))
        word_tag = tf.gather(tf.constant(self.tags), tf.gather(token_tag, word_first))
        names = tf.where(first_kept, tf.gather(word_tag, tf.maximum(word_of_token, 0)), "")
        keep = first.with_flat_values(spells)
        names = tf.ragged.boolean_mask(first.with_flat_values(names), keep)
        return {"num_tokens": tf.cast(names.row_lengths(), tf.int32),
                "token_tag": names.to_tensor(""),
                "token_start": tf.ragged.boolean_mask(starts, keep).to_tensor(-1),
                "token_end": tf.ragged.boolean_mask(ends, keep).to_tensor(-1)}

    def _entities(self, text, chars, first, starts, ends, token_tag):
        """Entities of the word tags, by conlleval's rules, per text."""
        is_first = first.flat_values
        word_of_token = tf.cumsum(tf.cast(is_first, tf.int32)) - 1
        words = tf.where(is_first)[:, 0]
        num_words = tf.shape(words)[0]
        word_end = tf.math.unsorted_segment_max(ends.flat_values, word_of_token, num_words)
        word_start = tf.gather(starts.flat_values, words)
        example = tf.gather(tf.cast(first.value_rowids(), tf.int32), words)
        tag = tf.gather(token_tag, words)
        prefix, kind = tf.gather(self._tag_prefix, tag), tf.gather(self._tag_type, tag)
        same_text = tf.concat([[False], example[1:] == example[:-1]], 0)
        p_prefix = tf.where(same_text, tf.concat([[0], prefix[:-1]], 0), 0)
        p_kind = tf.where(same_text, tf.concat([[0], kind[:-1]], 0), 0)
        begins = (kind > 0) & ((prefix == 1) | (prefix == 4) | (p_prefix == 0)
                               | (p_prefix >= 3) | (p_kind != kind))
        inside = kind > 0
        entity = tf.cumsum(tf.cast(begins, tf.int32)) - 1
        count = tf.reduce_sum(tf.cast(begins, tf.int32))
        member = tf.where(inside)[:, 0]
        start = tf.math.unsorted_segment_min(tf.gather(word_start, member),
                                             tf.gather(entity, member), count)
        end = tf.math.unsorted_segment_max(tf.gather(word_end, member),
                                           tf.gather(entity, member), count)
        heads = tf.where(begins)[:, 0]
        owner = tf.gather(example, heads)
        clean = tf.strings.unicode_encode(chars, "UTF-8")
        surface = tf.strings.substr(tf.gather(clean, owner), start, end - start,
                                    unit="UTF8_CHAR")
        rows = tf.shape(text)[0]

        def per_text(values, default):
            return tf.RaggedTensor.from_value_rowids(values, owner, nrows=rows).to_tensor(
                default)

        return {"num_entities": tf.math.bincount(owner, minlength=rows, maxlength=rows,
                                                 dtype=tf.int32),
                "entity_type": per_text(tf.gather(self._type_names,
                                                  tf.gather(kind, heads)), ""),
                "entity_text": per_text(surface, ""),
                "entity_start": per_text(start, -1), "entity_end": per_text(end, -1)}
