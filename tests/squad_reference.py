"""The host form of SQuAD's sliding windows, kept only to check the graph's.

`featurize` builds the features of `tasks.squad.data.featurize` window by
window in Python and numpy, as google-research/albert `squad_utils.py`
(`convert_examples_to_features`) does: `doc_windows` its loop over document
spans, `max_context` its `_check_is_max_context`, `answer_token_span` the
first and last token overlapping an answer, `answer_chars` where the answer
is (its text at its `answer_start`, its words separated by any whitespace, as
`read_squad_examples` compares the whitespace-split texts). Nothing of the
featurization it checks is imported: the tokenizer's ids and offsets and the
`Features` container are its only inputs.
"""

import collections

import numpy as np

from albert_tf.data.features import Features

Window = collections.namedtuple("Window", ["question_index", "doc_start", "doc_length",
                                           "query_length"])
Context = collections.namedtuple("Context", ["ids", "starts", "ends"])

_TOKEN_ARRAYS = {"token_ids": np.int32, "segment_ids": np.int32, "p_mask": np.int32,
                 "token_start_char": np.int32, "token_end_char": np.int32,
                 "token_is_max_context": np.int8}
_WINDOW_ARRAYS = ("start_positions", "end_positions", "is_impossible", "question_index")


def doc_windows(num_tokens, max_tokens, doc_stride):
    """`[(start, length)]`: the reference's sliding windows over the context tokens.

    Each window takes up to `max_tokens`; the next starts `doc_stride` later,
    until one reaches the end. An empty context still gets one empty window.
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

    Score min(left, right context) + 0.01 * window length; the first window
    wins a tie.
    """
    starts = np.array([s for s, _ in windows])[:, None]
    lengths = np.array([n for _, n in windows])[:, None]
    position = np.arange(num_tokens)[None, :]
    left, right = position - starts, starts + lengths - 1 - position
    score = np.where((left >= 0) & (right >= 0), np.minimum(left, right) + 0.01 * lengths,
                     -np.inf)
    return np.argmax(score, axis=0)[None, :] == np.arange(len(windows))[:, None]


def answer_token_span(starts, ends, char_start, char_end):
    """`(first, last)` token whose span `[starts[i], ends[i])` overlaps the answer; or None."""
    hit = np.flatnonzero((ends > char_start) & (starts < char_end))
    return (int(hit[0]), int(hit[-1])) if hit.size else None


def answer_chars(context, text, start):
    """`[begin, end)` of the answer `text` at character `start` of `context`, or None:
    its words, one after the other from `start` on (whitespace before the first
    skipped), with any run of whitespace between two of them."""
    words, at = text.split(), start
    if not words:
        return None
    while at < len(context) and context[at].isspace():
        at += 1
    begin = at
    for i, word in enumerate(words):
        if i:
            gap = at
            while at < len(context) and context[at].isspace():
                at += 1
            if at == gap:
                return None
        if context[at:at + len(word)] != word:
            return None
        at += len(word)
    return begin, at


def _answer(example, context, is_training):
    """`(first, last)` context token of the first answer, None, or "skip"."""
    if example.is_impossible or not example.answers:
        return None
    text, start = example.answers[0]
    chars = answer_chars(example.context, text, start)
    if chars is None:  # a training answer not where the file says is left out
        if is_training:
            return "skip"
        chars = (start, start + len(text))
    tokens = answer_token_span(context.starts, context.ends, *chars)
    return "skip" if tokens is None and is_training else tokens


def _labels(answer, window, query_length):
    """(start, end, is_impossible) in window coordinates; [CLS] when not inside it."""
    start, length = window
    if answer is None or not (start <= answer[0] and answer[1] < start + length):
        return 0, 0, 1
    offset = query_length + 2 - start
    return answer[0] + offset, answer[1] + offset, 0


def _fill(arrays, row, query, context, window, is_max, sep_id):
    """Writes window `row` ([CLS] already there); returns its length in tokens."""
    start, length = window
    c0 = len(query) + 2
    c1 = c0 + length
    arrays["token_ids"][row, 1:c0 - 1] = query
    arrays["token_ids"][row, c0:c1] = context.ids[start:start + length]
    arrays["token_ids"][row, [c0 - 1, c1]] = sep_id
    arrays["segment_ids"][row, c0:c1 + 1] = 1
    arrays["p_mask"][row, 0] = 0
    arrays["p_mask"][row, c0:c1] = 0
    arrays["token_start_char"][row, c0:c1] = context.starts[start:start + length]
    arrays["token_end_char"][row, c0:c1] = context.ends[start:start + length]
    arrays["token_is_max_context"][row, c0:c1] = is_max[start:start + length]
    return c1 + 1


def featurize(examples, tokenizer, max_seq_length=384, doc_stride=128, max_query_length=64,
              is_training=False):
    """`(Features, windows)` as `tasks.squad.data.featurize` returns them."""
    contexts = {c: Context(*(np.array(a, np.int32) for a in tokenizer.encode_with_offsets(c)))
                for c in dict.fromkeys(e.context for e in examples)}
    queries = tokenizer.encode_batch([e.question for e in examples])
    plan = []
    for index, example in enumerate(examples):
        context, query = contexts[example.context], queries[index][:max_query_length]
        answer = _answer(example, context, is_training)
        if answer == "skip":
            continue
        spans = doc_windows(len(context.ids), max_seq_length - len(query) - 3, doc_stride)
        plan.append((index, query, context, answer, spans, max_context(spans, len(context.ids))))
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
