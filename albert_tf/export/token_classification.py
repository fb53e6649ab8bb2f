"""Serving a token classifier from raw text: entities with character offsets, and tags.

Words. The tag of a word is read from its first token; the words of raw
text are `albert_tf.steps.words.graph_word_starts`'s (which featurization
runs on the training texts too).

Windows. A text of more than `max_seq_length - 2` tokens is cut into
consecutive windows of that many tokens, each `[CLS] window [SEP]`
(`albert_tf.steps.windows.consecutive_windows`, which featurizes the
task's training data too); the tags of all windows are put back in order.

`serving_default` takes `text` string `(batch_size,)` and returns, padded
per batch (use the counts):

- `num_entities` int32 (batch,); `entity_type`, `entity_text` string and
  `entity_start`, `entity_end` int32 (batch, max_entities): the type and the
  code point span `[start, end)` into the input text ("" and -1 padding).
  Entities are read from the word tags by conlleval's rules
  (`read_entities`, which writes the fine-tuning run's prediction files too).
- `num_tokens` int32 (batch,); `token_tag` string (batch, max_tokens): the
  word's tag on its first token, "" on its other tokens and on padding;
  `token_start`, `token_end` int32: each token's code point span (-1 padding).
  Only tokens that spell a character are listed (a lone "▁" is not: no token
  has an empty span); a word's tag is then on its first listed token.

Invalid UTF-8 is read as U+FFFD (the tokenizers' rule); offsets and
`entity_text` then refer to that decoded text.
"""

import functools

import tensorflow as tf

from albert_tf.export.base import WEB_ASSETS, ServingModule
from albert_tf.steps import text_limit
from albert_tf.steps.packing import padded_length
from albert_tf.steps.windows import consecutive_windows
from albert_tf.steps.words import graph_word_starts, read_entities, word_spans

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

    web_decoder = WEB_ASSETS / "decoder_token_classification.js"

    def __init__(self, model, tokenizer, max_seq_length, tags):
        super().__init__(model, tokenizer, max_seq_length, name="albert_token_serving")
        self.tags = tuple(tags)
        self._decode = functools.partial(model.decode)  # not tracked (see ServingModule)
        self._crf_scores = functools.partial(_crf_scores, model)  # not tracked
        self.define_signatures(self._serve, ("text",))

    def decoding_settings(self):
        """Tags in class order, and the CRF's transition/start/end scores (None
        without one: each word's argmax)."""
        return {"kind": "token_classification", "inputs": ["text"], "tags": list(self.tags),
                "crf": self._crf_scores()}

    def text_windows(self):
        room = self.max_seq_length - 2  # consecutive windows
        return {"inputs": ["text"], "room": room, "step": room,
                "max_tokens": self.windowed_tokens}

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
        # Texts are tagged up to their first `windowed_tokens` tokens.
        text = text_limit.cut(text, self.tokenizer, self.windowed_tokens)
        ids, starts, ends = self.tokenizer.tokenize_with_offsets(text)
        chars = tf.strings.unicode_decode(text, "UTF-8", errors="replace")
        first = graph_word_starts(chars, starts, ends)
        inputs, word_mask, where = self._windows(ids, first)
        logits = self.run_model_in_chunks(inputs)["logits"]
        tags = self._decode(logits, word_mask)  # (rows, length)
        token_tag = tf.gather_nd(tags, where)  # (tokens,) in text order
        word_start, word_end, word_row = word_spans(first, starts, ends)
        word_tag = tf.gather(token_tag, tf.where(first.flat_values)[:, 0])
        outputs = read_entities(self.tags, chars, word_start, word_end, word_row, word_tag)
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
