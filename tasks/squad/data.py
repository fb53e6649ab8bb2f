"""SQuAD v1.1 / v2.0: reading the official JSON, and sliding-window features.

`featurize` builds the windows `[CLS] question [SEP] context-window [SEP]` of
google-research/albert `squad_utils.py` (`convert_examples_to_features`):
same windows, labels and p_mask. Text meets tokens differently: through
`HostTokenizer.encode_with_offsets` (exact character offsets) instead of the
reference's longest-common-subsequence alignment (which drops an example when
under 80% of its characters align); an answer maps to the first through last
token overlapping it, so "1990" of "1990,", accents, runs of spaces and <unk>
characters all map. Decoding reads only the arrays (the engine caches them).
"""

import collections
import dataclasses
import logging
import re

import numpy as np

from albert_tf.io_utils import read_json
from albert_tf.data.features import Features

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


# -- Answers and windows --------------------------------------------------------

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


def answer_token_span(starts, ends, char_start, char_end):
    """`(first, last)` token whose span `[starts[i], ends[i])` overlaps the answer; or None."""
    hit = np.flatnonzero((ends > char_start) & (starts < char_end))
    return (int(hit[0]), int(hit[-1])) if hit.size else None


def doc_windows(num_tokens, max_tokens, doc_stride):
    """`[(start, length)]`: the reference's sliding windows over the context tokens.

    Each window takes up to `max_tokens`; the next starts `doc_stride` later,
    until one reaches the end. An empty context still gets one empty window,
    so that every question is predicted (as unanswerable).
    """
    windows, start = [], 0
    while True:
        length = min(num_tokens - start, max_tokens)
        windows.append((start, length))
        if start + length >= num_tokens:
            return windows
        start += min(length, doc_stride)


def max_context(windows, num_tokens):
    """`(num_windows, num_tokens)` bool: window w is where token t has most context.

    The reference's `_check_is_max_context`: score min(left, right context)
    + 0.01 * window length; the first window wins a tie.
    """
    starts = np.array([s for s, _ in windows])[:, None]
    lengths = np.array([n for _, n in windows])[:, None]
    position = np.arange(num_tokens)[None, :]
    left, right = position - starts, starts + lengths - 1 - position
    score = np.where((left >= 0) & (right >= 0), np.minimum(left, right) + 0.01 * lengths,
                     -np.inf)
    return np.argmax(score, axis=0)[None, :] == np.arange(len(windows))[:, None]


# -- Featurization --------------------------------------------------------------

Window = collections.namedtuple("Window", ["question_index", "doc_start", "doc_length",
                                           "query_length"])
_Context = collections.namedtuple("_Context", ["ids", "starts", "ends"])
_TOKEN_ARRAYS = {"token_ids": np.int32, "segment_ids": np.int32, "p_mask": np.int32,
                 "token_start_char": np.int32, "token_end_char": np.int32,
                 "token_is_max_context": np.int8}
_WINDOW_ARRAYS = ("start_positions", "end_positions", "is_impossible", "question_index")


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


def _answer_tokens(example, context, is_training):
    """`(first, last)` context token of the first answer; None when unanswerable.

    Raises `_Skip` for a training answer that is not where the file says, or
    that covers no token (e.g. only whitespace).
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
    # Evaluation keeps such an example (its labels only feed eval losses), with
    # the file's span as given.
    tokens = answer_token_span(context.starts, context.ends, *(span or (start, start + len(text))))
    if tokens is None and is_training:
        raise _Skip(f"question {example.qid!r}: answer {text!r} covers no token")
    return tokens


def _labels(answer, window, query_length):
    """(start, end, is_impossible) in window coordinates; [CLS] when not inside it."""
    start, length = window
    if answer is None or not (start <= answer[0] and answer[1] < start + length):
        return 0, 0, 1
    offset = query_length + 2 - start
    return answer[0] + offset, answer[1] + offset, 0


def _fill(arrays, row, query, context, window, is_max, sep_id):
    """Writes window `row` ([CLS] already there) and returns its length in tokens:
    [CLS] query [SEP] context[start:start+length] [SEP]."""
    start, length = window
    c0 = len(query) + 2
    c1 = c0 + length
    arrays["token_ids"][row, 1:c0 - 1] = query
    arrays["token_ids"][row, c0:c1] = context.ids[start:start + length]
    arrays["token_ids"][row, [c0 - 1, c1]] = sep_id
    arrays["segment_ids"][row, c0:c1 + 1] = 1  # the final [SEP] is segment 1, as BERT's
    arrays["p_mask"][row, 0] = 0                # [CLS]: the no-answer position
    arrays["p_mask"][row, c0:c1] = 0
    arrays["token_start_char"][row, c0:c1] = context.starts[start:start + length]
    arrays["token_end_char"][row, c0:c1] = context.ends[start:start + length]
    arrays["token_is_max_context"][row, c0:c1] = is_max[start:start + length]
    return c1 + 1


def featurize(examples, tokenizer, max_seq_length=384, doc_stride=128, max_query_length=64,
              is_training=False):
    """Sliding-window features of SQuAD examples.

    Args:
        examples: `SquadExample`s; tokenizer: a `HostTokenizer`.
        max_seq_length: window length in tokens; max_query_length: questions
            are cut to this many tokens; doc_stride: tokens between windows.
        is_training: training labels the first answer (the reference demands
            exactly one); an example whose answer is not at its `answer_start`
            is logged and skipped (as BERT's `read_squad_examples`; ALBERT's
            reference does not check). Without it, every example gets windows
            and the same label arrays (from the first answer, as the file
            places it; (0, 0, 1) where there is none), for eval losses.

    Returns:
        `(features, windows)`. `features.arrays`, N windows, L = max_seq_length:
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
          token's max-context window (`max_context`).
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
    plan, skipped = [], 0
    for index, example in enumerate(examples):
        context, query = contexts[example.context], queries[index][:max_query_length]
        try:
            answer = _answer_tokens(example, context, is_training)
        except _Skip as e:
            log.warning("featurize: skipping %s", e)
            skipped += 1
            continue
        spans = doc_windows(len(context.ids), max_seq_length - len(query) - 3, doc_stride)
        plan.append((index, query, context, answer, spans, max_context(spans, len(context.ids))))
    if skipped:
        log.warning("featurize: skipped %d of %d training questions", skipped, len(examples))
    return _assemble(plan, tokenizer, max_seq_length, is_training)


def _assemble(plan, tokenizer, max_seq_length, is_training):
    """`(Features, windows)` of the planned windows."""
    n = sum(len(spans) for *_, spans, _ in plan)
    arrays = {name: np.zeros((n, max_seq_length), dtype) for name, dtype in _TOKEN_ARRAYS.items()}
    arrays["token_ids"][:] = tokenizer.pad_id
    arrays["token_ids"][:, 0] = tokenizer.cls_id
    arrays["p_mask"][:] = 1
    arrays["token_start_char"][:] = -1
    arrays["token_end_char"][:] = -1
    arrays.update({name: np.zeros(n, np.int32) for name in _WINDOW_ARRAYS})
    lengths, windows, row = np.zeros(n, np.int32), [], 0
    for index, query, context, answer, spans, is_max in plan:
        for w, span in enumerate(spans):
            lengths[row] = _fill(arrays, row, query, context, span, is_max[w], tokenizer.sep_id)
            (arrays["start_positions"][row], arrays["end_positions"][row],
             arrays["is_impossible"][row]) = _labels(answer, span, len(query))
            arrays["question_index"][row] = index
            windows.append(Window(index, span[0], span[1], len(query)))
            row += 1
    label_keys = ("start_positions", "end_positions", "is_impossible") if is_training else ()
    return Features(arrays, lengths, label_keys=label_keys), windows
