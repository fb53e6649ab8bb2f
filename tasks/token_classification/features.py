"""Token classification features: words to tokens, windows, and model tags back to words.

Every word's tag goes on its first token; the other tokens, [CLS], [SEP] and
padding get `IGNORED` (-100), which the loss skips. Texts longer than
`max_seq_length - 2` tokens are cut into consecutive windows of that many
tokens (`[CLS] window [SEP]` each), and predictions are put back in order:
the serving graph (`albert_tf.export.token_classification`) runs the same windows
(`albert_tf.steps.windows.consecutive_windows`).

Words: a CoNLL sentence's tokens; for JSON lines, the words of the serving
graph's rule (`graph_word_starts`, run eagerly on batches of texts) on the
tokenizer's tokens, each entity covering the words that start inside it.
Predicted entities with their character offsets are read by the serving
graph's `read_entities`, run eagerly too.
"""

import bisect
import dataclasses
import itertools
import logging

import numpy as np
import tensorflow as tf

from albert_tf.data import Features
from albert_tf.data.mapped import ragged_rows
from albert_tf.steps.words import graph_word_starts, read_entities
from albert_tf.models.token_classifier import IGNORED
from albert_tf.tasks.token_classification import tagging

log = logging.getLogger(__name__)

# Texts per eager call of the graph's word rule and entity reading.
BATCH_TEXTS = 4096


@dataclasses.dataclass
class Encoded:
    """One example on the tokenizer's tokens.

    ids: token ids; token_word: each token's word index, or -1 (not a
    word's first token); spans: each word's `(start, end)` in the text;
    tags: each word's gold tag in the model's scheme (None if unlabelled);
    misaligned: entities whose edges fall inside a word.
    """

    ids: list
    token_word: list
    spans: list
    tags: list | None
    misaligned: int = 0


def _conll_words(example, starts):
    """`token_word` of a CoNLL sentence: the word a token starts in, on its first token."""
    word_starts_at = [s for s, _ in example.words]
    token_word, seen = [], set()
    for start in starts:
        j = bisect.bisect_right(word_starts_at, start) - 1
        inside = j >= 0 and start < example.words[j][1]
        token_word.append(j if inside and j not in seen else -1)
        if inside:
            seen.add(j)
    return token_word


def _span_words(starts, ends, begins):
    """`(token_word, spans)` of a JSON-lines text from its tokens' word starts."""
    token_word, spans = [], []
    for start, end, first in zip(starts, ends, begins):
        if first:
            token_word.append(len(spans))
            spans.append([start, end])
        else:
            token_word.append(-1)
            spans[-1][1] = max(spans[-1][1], end)
    return token_word, [tuple(s) for s in spans]


def code_points(texts):
    """int32 code points of `texts`, ragged `(len(texts), None)` (one host copy)."""
    flat = np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"), np.uint32)
    lengths = np.fromiter((len(t) for t in texts), np.int64, len(texts))
    return tf.RaggedTensor.from_row_lengths(flat.astype(np.int32), lengths)


def word_starts(texts, offsets):
    """`graph_word_starts` of each text's tokens (`(starts, ends)` lists), run
    eagerly on batches: a bool array per text."""
    out = []
    for b in range(0, len(texts), BATCH_TEXTS):
        batch = offsets[b:b + BATCH_TEXTS]
        begins = graph_word_starts(code_points(texts[b:b + BATCH_TEXTS]),
                                   ragged_rows([s for s, _ in batch]),
                                   ragged_rows([e for _, e in batch]))
        flat, splits = begins.flat_values.numpy(), begins.row_splits.numpy()
        out.extend(flat[splits[i]:splits[i + 1]] for i in range(len(batch)))
    return out


def _span_tags(entities, spans, scheme):
    """Word tags of character-span entities, and how many do not align with words."""
    firsts = [s for s, _ in spans]
    on_words, misaligned, last_end = [], 0, 0
    for e in entities:
        lo = bisect.bisect_left(firsts, e.start)
        hi = bisect.bisect_left(firsts, e.end)
        if lo == hi or lo < last_end:
            misaligned += 1  # no word starts inside it, or it shares a word with the previous
            continue
        if spans[lo][0] != e.start or spans[hi - 1][1] != e.end:
            misaligned += 1
        on_words.append(tagging.Entity(e.type, lo, hi))
        last_end = hi
    return tagging.tags_of(on_words, len(spans), scheme), misaligned


def encode_all(examples, tokenizer, scheme):
    """The `Encoded` forms of `token_classification.data.TaggedExample`s."""
    tokens = [tokenizer.encode_with_offsets(e.text) for e in examples]
    raw = [i for i, e in enumerate(examples) if e.words is None]  # words by the graph's rule
    begins = dict(zip(raw, word_starts([examples[i].text for i in raw],
                                       [tokens[i][1:] for i in raw])))
    out = []
    for i, (example, (ids, starts, ends)) in enumerate(zip(examples, tokens)):
        if example.words is not None:
            tags = None if example.tags is None else tagging.convert(list(example.tags), scheme)
            out.append(Encoded(ids, _conll_words(example, starts), list(example.words), tags))
            continue
        token_word, spans = _span_words(starts, ends, begins[i])
        if example.entities is None:
            out.append(Encoded(ids, token_word, spans, None))
            continue
        tags, misaligned = _span_tags(example.entities, spans, scheme)
        out.append(Encoded(ids, token_word, spans, tags, misaligned))
    return out


def featurize(examples, tokenizer, max_seq_length, tags, labelled):
    """`Features` of `examples` with the tag list `tags` (class order).

    Arrays: token_ids, segment_ids, label (-100 where ignored; only if
    `labelled`); host arrays word_index (each position's word, -1 if none) and
    source (each window's example).
    """
    from albert_tf.steps.windows import consecutive_windows

    scheme = "bioes" if any(t[0] in "ES" for t in tags) else "iob2"
    tag_id = {t: i for i, t in enumerate(tags)}
    ids, words, labels, misaligned, first_bad = [], [], [], 0, None
    for example, encoded in zip(examples, encode_all(examples, tokenizer, scheme)):
        misaligned += encoded.misaligned
        if encoded.misaligned and first_bad is None:
            first_bad = example.where
        ids.append(encoded.ids)
        words.append(encoded.token_word)
        labels.append([IGNORED if w < 0 or not labelled else tag_id[encoded.tags[w]]
                       for w in encoded.token_word])
    if misaligned:
        log.warning("%d entities do not begin and end at word boundaries (the first at "
                        "%s): they are tagged on the words that start inside them",
                        misaligned, first_bad)
    # The serving graph's windows (albert_tf.export.token_classification).
    windows = consecutive_windows(ragged_rows(ids), max_seq_length, tokenizer.cls_id,
                                  tokenizer.sep_id, tokenizer.pad_id,
                                  [(ragged_rows(labels), IGNORED), (ragged_rows(words), -1)])
    label, word_index = (v.numpy() for v in windows["values"])
    arrays = {"token_ids": windows["token_ids"].numpy(), "word_index": word_index,
              "source": windows["text"].numpy()}
    arrays["segment_ids"] = np.zeros_like(arrays["token_ids"])
    if labelled:
        arrays["label"] = label
    return Features(arrays, windows["tokens"].numpy() + 2,
                    label_keys=("label",) if labelled else (),
                    host_keys=("word_index", "source"))


def word_tags(features, tag_ids, num_words, tags):
    """Predicted word tags per example from per-position tag ids (windows, seq);
    a word without a token of its own is "O"."""
    out = [["O"] * n for n in num_words]
    words = features.arrays["word_index"]
    for row in range(len(features)):
        example = out[features.arrays["source"][row]]
        for position in np.nonzero(words[row] >= 0)[0]:
            example[words[row, position]] = tags[tag_ids[row, position]]
    return out


def char_entities(texts, spans, word_tag_lists, tags):
    """Each text's entities as `{"type", "start", "end", "text"}` (code points,
    end exclusive): the serving graph's `read_entities`, run eagerly on
    batches, on the words' `spans` and tags (names in `tags`)."""
    names = list(tags) + ([] if tagging.OUTSIDE in tags else [tagging.OUTSIDE])
    tag_id = {t: i for i, t in enumerate(names)}
    out = []
    for b in range(0, len(texts), BATCH_TEXTS):
        batch = range(b, min(b + BATCH_TEXTS, len(texts)))
        # Flat arrays built from generators: a tuple a word would cost more in
        # garbage collection than the graph's whole reading.
        counts = np.fromiter((len(spans[i]) for i in batch), np.int64, len(batch))
        row = np.repeat(np.arange(len(batch), dtype=np.int32), counts)
        start, end = np.fromiter(itertools.chain.from_iterable(
            itertools.chain.from_iterable(spans[i] for i in batch)), np.int32,
            2 * int(counts.sum())).reshape(-1, 2).T
        tag = np.fromiter((tag_id[t] for i in batch for t in word_tag_lists[i]), np.int32,
                          int(counts.sum()))
        found = {k: v.numpy().tolist() for k, v in read_entities(
            names, code_points([texts[i] for i in batch]), start, end, row, tag).items()}
        for r, count in enumerate(found["num_entities"]):
            out.append([{"type": kind.decode(), "start": first, "end": last,
                         "text": surface.decode("utf-8", "surrogatepass")}
                        for kind, first, last, surface in zip(
                            *(found[k][r][:count] for k in ("entity_type", "entity_start",
                                                            "entity_end", "entity_text")))])
    return out
