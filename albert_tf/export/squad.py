"""Serving extractive question answering (SQuAD v1.1 / v2.0) from raw text.

`serving_default` takes `question` and `context`, string `(batch_size,)`, and
does in the graph what `tasks.squad.task.SquadTask` does on the host: tokenize
(cutting the question to `max_query_length` tokens), slide windows over the
context (`doc_stride`), run the model on every window of the batch at once,
and decode the best span of each question (`squad_decode`, whose functions
evaluation runs too). Outputs, all `(batch_size,)`:

- `answer` string: the best span's text, stripped of outer whitespace; ""
  when there is no valid span, and for v2.0 when the model says there is
  no answer (`null_odds > null_threshold`);
- `start`, `end` int32: character offsets of the answer in the context as
  given (code points; invalid UTF-8 counts as one U+FFFD per bad
  sequence), so that `context[start:end] == answer`; -1 when the answer is "";
- `score` float32: the best span's start + end score (logits for the span
  head, log-probabilities for ALBERT's beam head), -2e6 without a valid span;
- v2.0 only: `null_odds` float32 (the host's `null_odds.json` value) and
  `no_answer_probability` float32, its sigmoid (for the beam head, the
  model's probability that the question is unanswerable).
"""

import tensorflow as tf

from albert_tf.steps import text_limit
from albert_tf.export.base import TOKEN_INPUTS, WEB_ASSETS, ServingModule
from albert_tf.steps import squad_decode
from albert_tf.steps import squad_windows
from albert_tf.tokenizer.sentencepiece import graph_ops


class SquadServing(ServingModule):
    """Raw-text signatures of a question-answering model.

    Args:
        model: `AlbertSpanQA` (head "span") or `AlbertBeamQA` (head "beam").
        tokenizer: its `AlbertTokenizer`.
        max_seq_length: window length in tokens.
        options: the run's `tasks.options.SquadOptions` (doc_stride,
            max_query_length, max_answer_length).
        head: "span" or "beam"; v2: whether the task is SQuAD v2.0.
        null_threshold: v2.0: answer "" when null odds exceed it.
    """

    web_decoder = WEB_ASSETS / "decoder_question_answering.js"

    input_names = TOKEN_INPUTS + ("p_mask",)

    def __init__(self, model, tokenizer, max_seq_length, options, head, v2, null_threshold=0.0):
        super().__init__(model, tokenizer, max_seq_length, name="albert_squad_serving")
        if head not in ("span", "beam"):
            raise ValueError(f"SquadServing: head must be 'span' or 'beam', got {head!r}")
        if max_seq_length - options.max_query_length - 3 < 1:
            # As featurization requires: a long question would leave a window no room
            # for the context, and the served graph nothing to gather an answer from.
            raise ValueError(f"max_query_length={options.max_query_length} leaves no room "
                             f"for the context in a window of max_seq_length="
                             f"{max_seq_length} ([CLS], 2 x [SEP] and 1 token of context)")
        self.doc_stride = options.doc_stride
        self.max_query_length = options.max_query_length
        self.max_answer_length = options.max_answer_length
        self.head, self.v2 = head, v2
        self.null_threshold = float(null_threshold)
        # top_k over the window needs at least start_n_top / end_n_top positions.
        self.min_length = max(getattr(model, "start_n_top", 1), getattr(model, "end_n_top", 1))
        self.define_signatures(self._serve, ("question", "context"))

    def text_windows(self):
        room = self.max_seq_length - self.max_query_length - 3  # the longest question's
        return {"inputs": ["context"], "room": room, "step": min(room, self.doc_stride),
                "max_tokens": self.windowed_tokens}

    def decoding_settings(self):
        return {"kind": "question_answering", "inputs": ["question", "context"],
                "head": self.head, "v2": bool(self.v2), "doc_stride": int(self.doc_stride),
                "max_query_length": int(self.max_query_length),
                "max_answer_length": int(self.max_answer_length),
                "null_threshold": self.null_threshold, "no_span_score": squad_decode.NO_SPAN_SCORE}

    def _serve(self, question, context):
        num_questions = tf.size(question)
        tok = self.tokenizer
        query = tok(text_limit.cut(question, tok, self.max_query_length))[:, :self.max_query_length]
        # Answers are looked for in the context's first `windowed_tokens`
        # tokens (offsets into the cut context are offsets into the given one).
        context = text_limit.cut(context, tok, self.windowed_tokens)
        ids, starts, ends = tok.tokenize_with_offsets(context)
        windows = squad_windows.make_windows(query, ids, self.max_seq_length, self.doc_stride,
                                             (tok.cls_id, tok.sep_id, tok.pad_id),
                                             self.min_length)
        outputs = self.run_model_in_chunks(windows.inputs)
        contexts = squad_decode.Contexts.build(graph_ops.Chars.decode(context))
        tokens = squad_decode.TokenChars.from_windows(windows, contexts.chars, starts, ends)
        top = squad_decode.window_top(tokens, contexts, outputs, self.head,
                                      self.max_answer_length, k=1)
        found, window, score = squad_decode.question_best(top, windows.question, num_questions)
        result = {"score": tf.cast(score, tf.float32)}
        if self.v2:
            odds = squad_decode.null_odds(outputs, self.head, windows.question, num_questions,
                                          score)
            found = found & ~(odds > self.null_threshold)
            result.update(null_odds=tf.cast(odds, tf.float32),
                          no_answer_probability=tf.cast(tf.sigmoid(odds), tf.float32))
        result["answer"], result["start"], result["end"] = squad_decode.answer_text(
            contexts, found, tf.gather(top.begin[:, 0], window),
            tf.gather(top.end_char[:, 0], window))
        return result
