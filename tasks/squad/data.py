"""SQuAD v1.1 / v2.0: reading the official JSON, and sliding-window features.

`featurize` builds the windows `[CLS] question [SEP] context-window [SEP]` of
google-research/albert `squad_utils.py` (`convert_examples_to_features`):
same windows, labels and p_mask; the windows and their token arrays are the
served graph's (`albert_tf.steps.squad_windows.make_windows`, run eagerly),
the labels numpy over its window plan. Text meets tokens through
`HostTokenizer.encode_with_offsets` (exact character offsets), not the
reference's longest-common-subsequence alignment (which drops an example when
under 80% of its characters align); an answer maps to the first through last
token overlapping it, so "1990" of "1990,", accents, runs of spaces and <unk>
characters all map. Decoding reads only the arrays (the engine caches them).
"""

import collections
import dataclasses
import itertools
import logging
import re

import numpy as np
import tensorflow as tf

from albert_tf.data.features import Features
from albert_tf.steps.squad_windows import count_windows, make_windows
from albert_tf.io_utils import read_json

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class SquadExample:
    """One question about one paragraph.

    answers / plausible_answers: tuples of `(text, char_start)`; answers is
        empty for unanswerable questions (and where the file gives none, e.g.
        test sets); plausible_answers are v2.0's distractor spans.
    """

    qid: str
    question: str
    context: str
    answers: tuple = ()
    is_impossible: bool = False
    plausible_answers: tuple = ()
    title: str = ""


# -- Reading --------------------------------------------------------------------

_KINDS = {str: "a string", list: "an array", dict: "an object", bool: "a boolean",
          int: "an integer"}
_REQUIRED = object()


def _json_kind(value):
    if isinstance(value, float):
        return "a number"
    return _KINDS.get(type(value), "null" if value is None else type(value).__name__)


def _get(obj, key, kind, where, default=_REQUIRED):
    """`obj[key]`, checked to be of `kind`; errors name the JSON path."""
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected an object, got {_json_kind(obj)}")
    if key not in obj:
        if default is _REQUIRED:
            raise ValueError(f"{where}: missing field {key!r}")
        return default
    value = obj[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"{where}.{key}: expected {_KINDS[kind]}, got {_json_kind(value)}")
    return value


def _read_answers(qa, key, where, allow_unplaced=False):
    """`((text, char_start), ...)` of `qa[key]` (absent: none); `allow_unplaced`:
    an `answer_start` of -1 (an answer given without its place) is accepted."""
    out = []
    for n, answer in enumerate(_get(qa, key, list, where, default=[])):
        at = f"{where}.{key}[{n}]"
        start = _get(answer, "answer_start", int, at)
        if start < (-1 if allow_unplaced else 0):
            want = "-1 or more" if allow_unplaced else "a non-negative integer"
            raise ValueError(f"{at}.answer_start: expected {want}, got {start}")
        out.append((_get(answer, "text", str, at), start))
    return tuple(out)


def _read_question(qa, context, title, where, allow_unplaced=False):
    answers = _read_answers(qa, "answers", where, allow_unplaced)
    impossible = _get(qa, "is_impossible", bool, where, default=False)
    if impossible and answers:
        raise ValueError(f"{where}.is_impossible: true, but the question has "
                         f"{len(answers)} answer(s)")
    return SquadExample(qid=_get(qa, "id", str, where), question=_get(qa, "question", str, where),
                        context=context, answers=answers, is_impossible=impossible,
                        plausible_answers=_read_answers(qa, "plausible_answers", where),
                        title=title)


def _read_paragraph(paragraph, title, where, seen, allow_unplaced):
    context = _get(paragraph, "context", str, where)
    examples = []
    for k, qa in enumerate(_get(paragraph, "qas", list, where)):
        example = _read_question(qa, context, title, f"{where}.qas[{k}]", allow_unplaced)
        if example.qid in seen:
            raise ValueError(f"{where}.qas[{k}].id: {example.qid!r} is already used by "
                             f"{seen[example.qid]}")
        seen[example.qid] = f"{where}.qas[{k}]"
        examples.append(example)
    return examples


def read_squad(path, allow_unplaced=False):
    """The questions of a SQuAD-format JSON file (v1.1, v2.0), in file order.

    allow_unplaced: accept an `answer_start` of -1 (CMRC 2018's dev set gives
    some answers without their place; the metric reads answer texts only).

    Raises:
        ValueError: the file is not JSON, or a field is missing or of the wrong
            type; the message names the file and the field's JSON path, e.g.
            `data[3].paragraphs[0].qas[5].answers[0].answer_start: expected
            an integer, got a string`. A question id used twice is an error.
            An answer whose text is not at its `answer_start` is NOT an error
            here (see `featurize`).
    """
    squad = read_json(path)
    if not isinstance(squad, dict) or not isinstance(squad.get("data"), list):
        raise ValueError(f"{path}: not a SQuAD file: expected an object with a 'data' array")
    examples, seen = [], {}
    try:
        for i, article in enumerate(squad["data"]):
            title = _get(article, "title", str, f"data[{i}]", default="")
            for j, paragraph in enumerate(_get(article, "paragraphs", list, f"data[{i}]")):
                examples += _read_paragraph(paragraph, title, f"data[{i}].paragraphs[{j}]", seen,
                                            allow_unplaced)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    return examples


# -- Answers ---------------------------------------------------------------------

def answer_char_span(context, text, char_start):
    """`[start, end)` of answer `text` at `char_start` of `context`, or None.

    Exact text first; else the answer's words at `char_start`, separated by
    any whitespace (SQuAD has answers that differ from the context only in
    spacing, and a few with a stray leading space).
    """
    if text and text.strip() == text and context.startswith(text, char_start):
        return char_start, char_start + len(text)
    words = text.split()
    if not words:
        return None
    found = re.compile(r"\s*" + r"\s+".join(map(re.escape, words))).match(context, char_start)
    if found is None:
        return None
    matched = found.group()
    return found.start() + len(matched) - len(matched.lstrip()), found.end()


# -- Featurization --------------------------------------------------------------

Window = collections.namedtuple("Window", ["question_index", "doc_start", "doc_length",
                                           "query_length"])
_Context = collections.namedtuple("_Context", ["ids", "starts", "ends"])
_TOKEN_ARRAYS = (("token_ids", np.int32), ("segment_ids", np.int32), ("p_mask", np.int32),
                 ("token_start_char", np.int32), ("token_end_char", np.int32),
                 ("token_is_max_context", np.int8))
_CHUNK = 4096  # questions a `make_windows` call: little fixed cost, temporaries of ~10 MB


def _tokenize_contexts(examples, tokenizer):
    """context text -> `_Context` of int32 arrays; each distinct paragraph once."""
    out = {}
    for example in examples:
        if example.context not in out:
            out[example.context] = _Context(*(np.array(a, np.int32) for a in
                                              tokenizer.encode_with_offsets(example.context)))
    return out


class _Skip(Exception):
    """A training example left out (logged with the reason)."""


def _answer_chars(example, is_training):
    """`(start, end)` characters of the first answer; None when unanswerable.

    Raises `_Skip` for a training answer that is not where the file says.
    Evaluation keeps such an example (its labels only feed eval losses), with
    the file's span as given.
    """
    if example.is_impossible or not example.answers:
        if is_training and not example.is_impossible:
            raise ValueError(f"question {example.qid!r} has no answer and is not marked "
                             "is_impossible; training needs one or the other")
        return None
    text, start = example.answers[0]
    span = answer_char_span(example.context, text, start)
    if span is None and is_training:
        raise _Skip(f"question {example.qid!r}: answer {text!r} is not at character "
                    f"{start} of its context ({example.context[start:start + len(text)]!r})")
    return span or (start, start + len(text))


def _answer_tokens(chars, starts, ends, lengths):
    """`(first, last)` (B,): each question's first and last context token whose span
    `[start, end)` overlaps its answer's characters `chars` (B, 2); -1 where none.
    `starts`, `ends`: the flat spans of each question's context tokens."""
    splits = np.concatenate([[0], np.cumsum(lengths)])
    row = np.repeat(np.arange(len(lengths)), lengths)
    hit = np.flatnonzero((ends > chars[row, 0]) & (starts < chars[row, 1]))
    hit_row = row[hit]
    first, last = np.full(len(lengths), -1), np.full(len(lengths), -1)
    opens = np.diff(hit_row, prepend=-1) != 0  # hits ascend: a row's first and last
    closes = np.diff(hit_row, append=len(lengths)) != 0
    first[hit_row[opens]] = hit[opens] - splits[hit_row[opens]]
    last[hit_row[closes]] = hit[closes] - splits[hit_row[closes]]
    return first, last


_Questions = collections.namedtuple("_Questions", ["index", "query", "query_lengths", "context",
                                                   "context_lengths", "first", "last", "answered"])


def _questions(kept, chars, contexts, queries):
    """The questions that get windows (B), as flat arrays: `index` (B,) the examples
    `kept`; `query`, `query_lengths` their (cut) ids `queries`; `context` `(ids, starts,
    ends)`, `context_lengths` of their `contexts`; `first`, `last` (B,) the tokens of
    their answers' characters `chars` (`(start, end)` or None; -1: no token);
    `answered` (B,): an answer was given."""
    query_lengths = np.fromiter(map(len, queries), np.int64, len(queries))
    query = np.fromiter(itertools.chain.from_iterable(queries), np.int32,
                        int(query_lengths.sum()))
    context = tuple(np.concatenate([getattr(c, name) for c in contexts] or [np.zeros(0, np.int32)])
                    for name in _Context._fields)
    context_lengths = np.fromiter((len(c.ids) for c in contexts), np.int64, len(contexts))
    spans = np.array([c or (-1, -1) for c in chars], np.int64).reshape(-1, 2)
    return _Questions(np.array(kept, np.int64), query, query_lengths, context, context_lengths,
                      *_answer_tokens(spans, *context[1:], context_lengths),
                      np.array([c is not None for c in chars], bool))


def featurize(examples, tokenizer, max_seq_length=384, doc_stride=128, max_query_length=64,
              is_training=False):
    """Sliding-window features of SQuAD examples.

    Args:
        examples: `SquadExample`s; tokenizer: a `HostTokenizer`.
        max_seq_length: window length in tokens; max_query_length: questions
            are cut to this many tokens; doc_stride: tokens between windows.
        is_training: training labels the first answer (the reference demands
            exactly one); an example whose answer is not at its `answer_start`,
            or covers no token (e.g. only whitespace), is logged and skipped (as
            BERT's `read_squad_examples`). Without it, every example gets windows
            and the same labels (from the first answer, as the file places it;
            (0, 0, 1) where there is none), for eval losses.

    Returns:
        `(features, windows)`; the windows and their token arrays are those of
        the served graph, `albert_tf.steps.squad_windows.make_windows`, run
        eagerly here. `features.arrays`, N windows, L = max_seq_length:
        - `token_ids`, `segment_ids` (N, L) int32, padded with `pad_id` / 0;
        - `p_mask` (N, L) int32: 1 where no answer can be (question, [SEP],
          padding), 0 on context tokens and on [CLS] (no answer);
        - `start_positions`, `end_positions`, `is_impossible` (N,) int32: the
          answer's tokens in the window, or (0, 0, 1) when the question is
          unanswerable or its answer is not entirely inside this window
          (the reference labels those at [CLS]);
        - `question_index` (N,) int32: the window's example in `examples`;
        - `token_start_char`, `token_end_char` (N, L) int32: each context
          token's `[start, end)` in the original context; -1 elsewhere;
        - `token_is_max_context` (N, L) int8: 1 where this window is the
          token's max-context window.
        `features.lengths` (N,) int32: real tokens; `label_keys`:
        ("start_positions", "end_positions", "is_impossible") when training,
        else () (ALBERT's beam head also conditions its end logits on the gold
        start while training: its `train_step` passes that label to the forward pass).
        `windows`: a `Window` per row (question_index, doc_start, doc_length,
        query_length), for inspection; decoding needs only the arrays.
    """
    if max_seq_length - max_query_length - 3 < 1:  # room for [CLS], 2 x [SEP], 1 token
        raise ValueError(f"featurize: max_seq_length={max_seq_length} must exceed "
                         f"max_query_length={max_query_length} + 3")
    if doc_stride < 1:
        raise ValueError(f"featurize: doc_stride={doc_stride} must be >= 1")
    contexts = _tokenize_contexts(examples, tokenizer)
    queries = tokenizer.encode_batch([e.question for e in examples])

    def build(kept, chars):
        return _questions(kept, chars, [contexts[examples[i].context] for i in kept],
                          [queries[i][:max_query_length] for i in kept])
    kept, chars, skipped = [], [], []
    for index, example in enumerate(examples):
        try:
            chars.append(_answer_chars(example, is_training))
            kept.append(index)
        except _Skip as e:
            skipped.append((index, str(e)))
    questions = build(kept, chars)
    uncovered = questions.answered & (questions.first < 0)
    if is_training and uncovered.any():
        for index in questions.index[uncovered].tolist():
            skipped.append((index, f"question {examples[index].qid!r}: answer "
                                   f"{examples[index].answers[0][0]!r} covers no token"))
        questions = build([i for i, bad in zip(kept, uncovered) if not bad],
                          [c for c, bad in zip(chars, uncovered) if not bad])
    for _, reason in sorted(skipped):
        log.warning("featurize: skipping %s", reason)
    if skipped:
        log.warning("featurize: skipped %d of %d training questions", len(skipped),
                    len(examples))
    return _assemble(questions, tokenizer, max_seq_length, doc_stride, is_training)


def _windows(questions, tokenizer, max_seq_length, doc_stride):
    """`make_windows` over the questions, `_CHUNK` at a time: `(arrays, row, doc_start,
    doc_length)`, the (N, L) arrays and per window its question, first context token
    and number of them (numpy). Each chunk is copied into place while in cache."""
    specials = (tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)
    query_splits, context_splits = (np.concatenate([[0], np.cumsum(lengths)]) for lengths in (
        questions.query_lengths, questions.context_lengths))
    first = np.concatenate([[0], np.cumsum(count_windows(
        questions.query_lengths, questions.context_lengths, max_seq_length, doc_stride))])
    out = {name: np.empty((first[-1], max_seq_length), dtype) for name, dtype in _TOKEN_ARRAYS}
    plans = collections.defaultdict(list)
    for begin in range(0, max(len(questions.index), 1), _CHUNK):
        end = min(begin + _CHUNK, len(questions.index))
        query, context = (tf.RaggedTensor.from_row_lengths(
            values[splits[begin]:splits[end]], lengths[begin:end]) for values, lengths, splits in (
                (questions.query, questions.query_lengths, query_splits),
                (questions.context[0], questions.context_lengths, context_splits)))
        windows = make_windows(query, context, max_seq_length, doc_stride, specials,
                               min_length=max_seq_length)
        rows = slice(first[begin], first[end])
        for name in ("token_ids", "segment_ids", "p_mask"):
            out[name][rows] = windows.inputs[name]
        at = np.asarray(windows.context_token)  # -1 outside the context: the appended -1
        for name, chars in zip(("token_start_char", "token_end_char"), questions.context[1:]):
            np.take(np.append(chars[context_splits[begin]:context_splits[end]], np.int32(-1)),
                    at, out=out[name][rows], mode="wrap")  # -1: the last; twice as fast
        out["token_is_max_context"][rows] = np.asarray(windows.is_max_context)
        plans["row"].append(np.asarray(windows.question) + begin)
        plans["doc_start"].append(np.asarray(windows.doc_start))
        plans["doc_length"].append(np.asarray(windows.doc_length))
    return out, *(np.concatenate(plans[name]) for name in ("row", "doc_start", "doc_length"))


def _assemble(questions, tokenizer, max_seq_length, doc_stride, is_training):
    """`(Features, windows)`: the windows' arrays and the reference's labels (the
    answer's tokens in window coordinates; [CLS] when not entirely inside)."""
    arrays, row, start, length = _windows(questions, tokenizer, max_seq_length, doc_stride)
    query_length = questions.query_lengths[row]
    first, last = questions.first[row], questions.last[row]
    inside = (first >= 0) & (start <= first) & (last < start + length)
    offset = query_length + 2 - start
    arrays["start_positions"] = np.where(inside, first + offset, 0).astype(np.int32)
    arrays["end_positions"] = np.where(inside, last + offset, 0).astype(np.int32)
    arrays["is_impossible"] = (~inside).astype(np.int32)
    arrays["question_index"] = questions.index[row].astype(np.int32)
    lengths = (query_length + length + 3).astype(np.int32)
    windows = list(map(Window, arrays["question_index"].tolist(), start.tolist(),
                       length.tolist(), query_length.tolist()))
    label_keys = ("start_positions", "end_positions", "is_impossible") if is_training else ()
    return Features(arrays, lengths, label_keys=label_keys), windows
