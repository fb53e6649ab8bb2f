// Extractive question answering in the browser, as `SquadServing`
// (albert_tf/export/squad.py) answers: the question and the context's windows
// (steps/squad_windows.py), each window's best span and the no-answer odds
// (steps/squad_decode.py).
import { codePoints, packedRow } from "./text.js";

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
export async function answerQuestion(head, rules, tokenizer, question, context, run) {
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

export function answer(model, [question, context]) {
  return answerQuestion(model.head, model.rules, model.tokenizer, question, context, model.run);
}
