// Token classification in the browser, as `TokenClassifierServing`
// (albert_tf/export/token_classification.py) answers: words
// (steps/words.py), consecutive windows (steps/windows.py), each word's tag (a
// CRF's Viterbi, models/crf.py) and the entities by conlleval's rules.
import { argmax, codePoints, packedRow } from "./text.js";

const PREFIX_CODES = { O: 0, B: 1, I: 2, E: 3, S: 4 };

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

export function answer(model, [text]) {
  return tag(model.head, model.rules, model.tokenizer, text, model.run);
}
