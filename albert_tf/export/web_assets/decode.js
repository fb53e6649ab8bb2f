// The serving graph's text processing and decoding in JavaScript, around a
// model that runs one packed row at a time (the `encoded` signature, batch 1):
// the same text cuts (albert_tf/steps/text_limit.py), packing, windows
// (squad_windows.py, token_classification.py), tag and span decoding
// (squad_decode.py, models/crf.py) and output padding as `serving_default`.
// No browser API is used: Node runs it too (tests/web/check_decode.mjs).
//
// `run(packed)` is async: {token_ids, segment_ids, padding_mask[, p_mask]}
// Int32Array(max_seq_length) each -> {output name: typed array (row-major)}.
// Offsets and spans are code point indices, as in the Python outputs.

const PREFIX_CODES = { O: 0, B: 1, I: 2, E: 3, S: 4 };

// Code points of a string; lone surrogates become U+FFFD (as tokenizer.js reads them).
export function codePoints(text) {
  const out = [];
  for (const ch of String(text)) {
    const cp = ch.codePointAt(0);
    out.push(cp >= 0xd800 && cp < 0xe000 ? 0xfffd : cp);
  }
  return out;
}

function inRanges(ranges, cp) {  // ranges: sorted [first, last] runs
  let lo = 0, hi = ranges.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (cp < ranges[mid][0]) hi = mid - 1;
    else if (cp > ranges[mid][1]) lo = mid + 1;
    else return true;
  }
  return false;
}

function argmax(values, from = 0, count = values.length) {
  let best = 0;  // the first of equal maxima, as tf.argmax
  for (let i = 1; i < count; i++) if (values[from + i] > values[from + best]) best = i;
  return best;
}

function padRows(rows, fill) {
  const width = Math.max(0, ...rows.map((r) => r.length));
  return rows.map((r) => r.concat(new Array(width - r.length).fill(fill)));
}

// The graph's text rules: head.text of head.json, and the task's word classes.
export class TextRules {
  constructor(text) {
    this.rules = text;
    this.standalone = text.standalone;  // CJK ideographs and ASCII punctuation
    this.punctuation = text.punctuation;
    this.solidWhitespace = text.solid_whitespace;
  }

  // A CJK ideograph or punctuation (`token_classification.is_standalone`).
  isStandalone(cp) {
    return cp >= 0 && (inRanges(this.standalone, cp) || inRanges(this.punctuation, cp));
  }

  isSolid(cp) { return !inRanges(this.solidWhitespace, cp); }

  // `text_limit.cut`: the text cut to the characters giving its first (or
  // last) `tokens` tokens; returned as given when nothing is cut.
  cut(text, tokens, keep = "first") {
    const r = this.rules;
    const limit = Math.max((tokens + 1) * r.max_token_chars, (r.max_word_chars || 0) + 1);
    const codes = codePoints(text);
    const weight = codes.map((cp) => {
      if (inRanges(r.whitespace, cp)) return 0;
      return r.standalone_words && this.isStandalone(cp) ? r.max_token_chars : 1;
    });
    const cap = r.whitespace_cap * limit;
    const kept = new Array(codes.length);
    if (keep === "first") {
      let before = 0;
      codes.forEach((_, i) => { kept[i] = before < limit && i < cap; before += weight[i]; });
    } else {
      let after = 0;
      for (let i = codes.length - 1; i >= 0; i--) {
        kept[i] = after < limit && codes.length - 1 - i < cap;
        after += weight[i];
      }
    }
    if (kept.every((k) => k)) return text;
    return String.fromCodePoint(...codes.filter((_, i) => kept[i]));
  }
}

// [CLS] a [SEP] (b [SEP]) padded to maxSeqLength, as SegmentPacker packs
// (the longer side loses tokens first, the first segment keeps at least half).
export function pack(idsA, idsB, maxSeqLength, special) {
  let tokens, segments;
  if (idsB === null) {
    tokens = [special.cls, ...idsA.slice(0, maxSeqLength - 2), special.sep];
    segments = tokens.map(() => 0);
  } else {
    const budget = maxSeqLength - 3;
    let keepA = idsA.length, keepB = idsB.length;
    if (keepA + keepB > budget) {
      keepA = Math.min(keepA, Math.max(budget - keepB, Math.floor((budget + 1) / 2)));
      keepB = budget - keepA;
    }
    const first = [special.cls, ...idsA.slice(0, keepA), special.sep];
    const second = [...idsB.slice(0, keepB), special.sep];
    tokens = first.concat(second);
    segments = first.map(() => 0).concat(second.map(() => 1));
  }
  return packedRow(tokens, segments, maxSeqLength, special);
}

function packedRow(tokens, segments, maxSeqLength, special) {
  const tokenIds = new Int32Array(maxSeqLength).fill(special.pad);
  const segmentIds = new Int32Array(maxSeqLength);
  const paddingMask = new Int32Array(maxSeqLength);
  tokens.forEach((t, i) => { tokenIds[i] = t; segmentIds[i] = segments[i]; paddingMask[i] = 1; });
  return { token_ids: tokenIds, segment_ids: segmentIds, padding_mask: paddingMask };
}

function softmax(row) {
  const top = Math.max(...row);
  const e = row.map((x) => Math.exp(x - top));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / sum);
}

// --- Sentence (pair) classification, multi-label, regression ---------------

export function decodeClassification(head, logits) {
  if (head.kind === "regression") return { score: logits[0] };
  if (head.kind === "multi_label") {
    const probabilities = logits.map((x) => 1 / (1 + Math.exp(-x)));
    const predicted = probabilities.map((p) => p >= head.threshold);
    const chosen = head.labels.filter((_, i) => predicted[i]);
    const labels = chosen.concat(head.labels.slice(chosen.length).map(() => ""));
    return { probabilities, predicted, labels, num_predicted: chosen.length };
  }
  const best = argmax(logits);
  return { label: head.labels[best], label_id: best, probabilities: softmax(logits) };
}

// `WindowPacker`'s windows of one text (pair), for `--long_inputs=window`
// exports: the longer segment windowed at `stride` (0: half its room), the
// other repeated in every window (cut to half the budget if longer).
export function textWindows(idsA, idsB, maxSeqLength, stride, special) {
  const pair = idsB !== null;
  const lenA = idsA.length, lenB = pair ? idsB.length : 0;
  const budget = maxSeqLength - (pair ? 3 : 2);
  const windowA = lenA > lenB;
  const fixed = windowA ? lenB : lenA, windowed = windowA ? lenA : lenB;
  const keep = lenA + lenB <= budget ? fixed : Math.min(fixed, Math.floor(budget / 2));
  const room = budget - keep;
  const step = stride ? Math.min(room, stride) : Math.max(Math.floor(room / 2), 1);
  const count = 1 + Math.ceil(Math.max(windowed - room, 0) / step);
  const rows = [];
  for (let k = 0; k < count; k++) {
    const start = k * step, length = Math.min(windowed - start, room);
    const [aStart, aLen] = windowA ? [start, length] : [0, keep];
    const [bStart, bLen] = windowA ? [0, keep] : [start, length];
    const first = [special.cls, ...idsA.slice(aStart, aStart + aLen), special.sep];
    const second = pair ? [...idsB.slice(bStart, bStart + bLen), special.sep] : [];
    rows.push(packedRow(first.concat(second), first.map(() => 0).concat(second.map(() => 1)),
      maxSeqLength, special));
  }
  return rows;
}

export async function classify(head, rules, tokenizer, texts, run) {
  const ids = texts.map((t) => tokenizer.tokenize(rules.cut(String(t), head.text_tokens)).ids);
  const [a, b] = [ids[0], ids.length > 1 ? ids[1] : null];
  if (head.window_stride === undefined || head.window_stride === null) {
    const packed = pack(a, b, head.max_seq_length, tokenizer.special);
    return decodeClassification(head, Array.from((await run(packed)).logits));
  }
  // Scored in windows: the mean of the windows' logits (`window_mean`).
  const windows = textWindows(a, b, head.max_seq_length, head.window_stride, tokenizer.special);
  let sum = null;
  for (const packed of windows) {
    const logits = Array.from((await run(packed)).logits);
    sum = sum === null ? logits : sum.map((x, i) => x + logits[i]);
  }
  return decodeClassification(head, sum.map((x) => x / windows.length));
}

// --- Token classification ----------------------------------------------------

// `token_classification.word_starts`: whether each token begins a word.
export function wordStarts(codes, offsets, rules) {
  return offsets.map(([start], i) => {
    if (i === 0) return true;
    const [prevStart, prevEnd] = offsets[i - 1];
    if (prevStart === prevEnd) return false;  // after a lone "▁": one word
    if (start > prevEnd) return true;
    if (start < prevEnd) return false;  // overlapping: the same characters
    const at = (k) => (k >= 0 && k < codes.length ? codes[k] : -1);
    return rules.isStandalone(at(start)) || rules.isStandalone(at(prevEnd - 1));
  });
}

// `LinearChainCRF.decode` of one sequence: potentials[t][tag] -> tags, in
// float32 as the graph adds them.
export function viterbi(potentials, crf) {
  const n = potentials.length;
  if (n === 0) return [];
  const f = Math.fround;
  const tags = crf.start_scores.length;
  let delta = crf.start_scores.map((s, j) => f(s + potentials[0][j]));
  const pointers = [];
  for (let t = 1; t < n; t++) {
    const next = new Array(tags), from = new Array(tags);
    for (let to = 0; to < tags; to++) {
      let best = 0, bestScore = f(delta[0] + crf.transitions[0][to]);
      for (let k = 1; k < tags; k++) {
        const score = f(delta[k] + crf.transitions[k][to]);
        if (score > bestScore) { best = k; bestScore = score; }
      }
      from[to] = best;
      next[to] = f(bestScore + potentials[t][to]);
    }
    pointers.push(from);
    delta = next;
  }
  const path = [argmax(delta.map((d, j) => f(d + crf.end_scores[j])))];
  for (let t = pointers.length - 1; t >= 0; t--) path.unshift(pointers[t][path[0]]);
  return path;
}

// Tag ids of one window's logits (length x tags) at its word positions
// (`AlbertTokenClassifier.decode`): Viterbi over them, else each argmax.
export function windowTags(logits, positions, numTags, crf) {
  const rows = positions.map((p) => Array.from(logits.subarray(p * numTags, (p + 1) * numTags)));
  return crf ? viterbi(rows, crf) : rows.map((r) => argmax(r));
}

// Entities (conlleval's rules) and per-token tags from each token's word
// flag and its word's tag id (`TokenClassifierServing._entities`, `_tokens`).
export function tagOutputs(head, codes, offsets, first, tokenTag) {
  const types = [...new Set(head.tags.filter((t) => t !== "O").map((t) => t.slice(2)))].sort();
  const prefix = (tag) => PREFIX_CODES[head.tags[tag][0]];
  const kind = (tag) => (head.tags[tag] === "O" ? 0 : 1 + types.indexOf(head.tags[tag].slice(2)));
  const words = [];  // [start, end, tag, first token]
  offsets.forEach(([start, end], i) => {
    if (first[i]) words.push([start, end, tokenTag[i], i]);
    else words[words.length - 1][1] = Math.max(words[words.length - 1][1], end);
  });
  const entities = [];
  let before = [0, 0];  // the previous word's prefix and kind
  for (const [start, end, tag] of words) {
    const [p, k] = [prefix(tag), kind(tag)];
    if (k > 0) {
      if (p === 1 || p === 4 || before[0] === 0 || before[0] >= 3 || before[1] !== k || !entities.length) {
        entities.push({ type: types[k - 1], start, end });
      } else {
        const last = entities[entities.length - 1];
        last.start = Math.min(last.start, start);
        last.end = Math.max(last.end, end);
      }
    }
    before = [p, k];
  }
  const tokens = [];
  let word = -1, listed = false;
  offsets.forEach(([start, end], i) => {
    if (first[i]) { word++; listed = false; }
    if (end > start) {
      tokens.push({ tag: listed ? "" : head.tags[words[word][2]], start, end });
      listed = true;
    }
  });
  const surface = (e) => String.fromCodePoint(...codes.slice(e.start, e.end));
  return {
    num_entities: entities.length, entity_type: entities.map((e) => e.type),
    entity_text: entities.map(surface), entity_start: entities.map((e) => e.start),
    entity_end: entities.map((e) => e.end), num_tokens: tokens.length,
    token_tag: tokens.map((t) => t.tag), token_start: tokens.map((t) => t.start),
    token_end: tokens.map((t) => t.end),
  };
}

export async function tag(head, rules, tokenizer, text, run) {
  const length = head.max_seq_length, window = length - 2;
  const cut = rules.cut(String(text), head.text.windowed_lengths * length);
  const codes = codePoints(cut);
  const { ids, offsets } = tokenizer.tokenize(cut);
  const first = wordStarts(codes, offsets, rules);
  const tokenTag = new Array(ids.length).fill(0);
  const count = Math.max(1, Math.ceil(ids.length / window));
  for (let r = 0; r < count; r++) {
    const rowIds = ids.slice(r * window, (r + 1) * window);
    if (!rowIds.length) continue;  // an empty text: nothing to tag
    const tokens = [tokenizer.special.cls, ...rowIds, tokenizer.special.sep];
    const logits = (await run(packedRow(tokens, tokens.map(() => 0), length, tokenizer.special))).logits;
    const positions = [];
    rowIds.forEach((_, j) => { if (first[r * window + j]) positions.push(j + 1); });
    const tags = windowTags(logits, positions, head.tags.length, head.crf);
    positions.forEach((p, j) => { tokenTag[r * window + p - 1] = tags[j]; });
  }
  return tagOutputs(head, codes, offsets, first, tokenTag);
}

// --- Question answering ------------------------------------------------------

// `squad_windows.make_windows` for one question: the windows' packed inputs,
// each position's context token (-1 elsewhere) and max-context flag.
export function questionWindows(head, query, numContext, contextIds, special) {
  const length = head.max_seq_length, q = query.length;
  const maxTokens = length - q - 3, step = Math.min(maxTokens, head.doc_stride);
  const count = 1 + Math.ceil(Math.max(numContext - maxTokens, 0) / step);
  const spans = [];
  for (let k = 0; k < count; k++) {
    const start = k * step;
    spans.push([start, Math.min(numContext - start, maxTokens)]);
  }
  // Each token's max-context window: the most context on its shorter side,
  // plus 0.01 x the window's length; the first window wins ties.
  const bestWindow = new Array(numContext).fill(-1);
  for (let t = 0; t < numContext; t++) {
    let best = -Infinity;
    spans.forEach(([start, len], k) => {
      if (t < start || t > start + len - 1) return;
      const score = Math.min(t - start, start + len - 1 - t) + 0.01 * len;
      if (score > best) { best = score; bestWindow[t] = k; }
    });
  }
  return spans.map(([start, len], k) => {
    const c0 = q + 2, c1 = c0 + len;
    const tokens = [special.cls, ...query, special.sep,
      ...contextIds.slice(start, start + len), special.sep];
    const packed = packedRow(tokens, tokens.map((_, p) => (p >= c0 ? 1 : 0)), length, special);
    packed.p_mask = new Int32Array(length).fill(1);
    const contextToken = new Array(length).fill(-1), isMax = new Array(length).fill(false);
    packed.p_mask[0] = 0;
    for (let p = c0; p < c1; p++) {
      packed.p_mask[p] = 0;
      contextToken[p] = start + p - c0;
      isMax[p] = bestWindow[start + p - c0] === k;
    }
    return { packed, contextToken, isMax };
  });
}

// Candidates (start, end, score) of one window's outputs (`span_candidates`,
// `beam_candidates`): scores summed in float64 from the float32 outputs.
function candidates(head, out, length) {
  const found = [];
  if (head.head === "span") {
    for (let s = 0; s < length; s++) {
      for (let j = 0; j < head.max_answer_length; j++) {
        const e = s + j;
        found.push([s, e, e < length ? out.start_logits[s] + out.end_logits[e] : -Infinity]);
      }
    }
  } else {
    const perStart = out.end_top_index.length / out.start_top_index.length;
    for (let i = 0; i < out.end_top_index.length; i++) {
      const s = Math.floor(i / perStart);
      found.push([out.start_top_index[s], out.end_top_index[i],
        out.start_top_log_probs[s] + out.end_top_log_probs[i]]);
    }
  }
  return found;
}

// One question's answer, as `SquadServing._serve` gives it.
export async function answer(head, rules, tokenizer, question, context, run) {
  const length = head.max_seq_length;
  const query = tokenizer.tokenize(rules.cut(String(question), head.max_query_length))
    .ids.slice(0, head.max_query_length);
  const cut = rules.cut(String(context), head.text.windowed_lengths * length);
  const codes = codePoints(cut);
  const { ids, offsets } = tokenizer.tokenize(cut);
  const solidBefore = [0];  // solid characters before each position
  codes.forEach((cp, i) => solidBefore.push(solidBefore[i] + (rules.isSolid(cp) ? 1 : 0)));
  const windows = questionWindows(head, query, ids.length, ids, tokenizer.special);
  let best = -Infinity, span = null, nullScore = Infinity;
  for (const w of windows) {
    const out = await run(w.packed);
    const windowNull = head.head === "span"
      ? Math.fround(out.start_logits[0] + out.end_logits[0]) : out.cls_logits[0];
    nullScore = Math.min(nullScore, windowNull);
    for (const [s, e, score] of candidates(head, out, length)) {
      if (!(s >= 0 && s < length && e >= s && e < length && e - s < head.max_answer_length)) continue;
      const a = w.contextToken[s], b = w.contextToken[e];
      if (a < 0 || b < 0 || !w.isMax[s]) continue;
      const begin = offsets[a][0], stop = offsets[b][1];
      if (solidBefore[stop] - solidBefore[begin] <= 0) continue;
      if (score > best) { best = score; span = [begin, stop]; }  // the first wins ties
    }
  }
  let found = span !== null;
  const score = found ? best : head.no_span_score;
  const result = { score: Math.fround(score) };
  if (head.v2) {
    const odds = head.head === "span" ? nullScore - score : nullScore;
    found = found && !(odds > head.null_threshold);
    result.null_odds = Math.fround(odds);
    result.no_answer_probability = Math.fround(1 / (1 + Math.exp(-odds)));
  }
  if (!found) return { ...result, answer: "", start: -1, end: -1 };
  let [first, last] = [span[0], span[1] - 1];  // stripped of outer whitespace
  while (!rules.isSolid(codes[first])) first++;
  while (!rules.isSolid(codes[last])) last--;
  return { ...result, answer: String.fromCodePoint(...codes.slice(first, last + 1)),
    start: first, end: last + 1 };
}

// --- Multiple choice ---------------------------------------------------------

// `multiple_choice.qa_texts`: the question and the choice, or (fill_blank)
// the question with every "_" replaced by the choice.
export function qaText(head, question, choice) {
  if (head.fill_blank && question.includes("_")) return question.split("_").join(choice);
  return question + " " + choice;
}

// One question's `{probabilities, choice_index, choice}`; "" choices are none.
export async function choose(head, rules, tokenizer, context, question, choices, run) {
  const length = head.max_seq_length, budget = length - 3;
  const contextIds = tokenizer.tokenize(rules.cut(String(context), length)).ids;
  const logits = [];
  for (const choice of choices) {
    if (!choice.length) { logits.push(-Infinity); continue; }
    const qa = rules.cut(qaText(head, String(question), choice), head.max_qa_length, "last");
    const qaIds = tokenizer.tokenize(qa).ids;
    const keep = Math.min(qaIds.length, head.max_qa_length, budget);
    const packed = pack(contextIds.slice(0, budget - keep), qaIds.slice(qaIds.length - keep),
      length, tokenizer.special);
    logits.push((await run(packed)).logits[0]);
  }
  const answered = logits.some((x) => x > -Infinity);
  if (!answered) return { probabilities: choices.map(() => 0), choice_index: -1, choice: "" };
  const best = argmax(logits);
  return { probabilities: softmax(logits), choice_index: best, choice: choices[best] };
}

// --- A batch -------------------------------------------------------------------

// Rows of one answer each -> serving_default's columns; the per-entity and
// per-token lists padded to the batch's longest as the graph pads them
// ("" for strings, -1 for offsets).
export function columns(rows) {
  const out = {};
  for (const key of rows.length ? Object.keys(rows[0]) : []) {
    const values = rows.map((r) => r[key]);
    const listed = Array.isArray(values[0]) && /^(entity|token)_/.test(key);
    out[key] = listed ? padRows(values, /_(type|text|tag)$/.test(key) ? "" : -1) : values;
  }
  return out;
}
