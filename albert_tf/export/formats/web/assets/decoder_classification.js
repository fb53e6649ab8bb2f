// Sentence (pair) classification, multi-label and regression in the browser, as
// `ClassifierServing` (albert_tf/export/classification.py) answers: the text
// (pair) packed, or scored in windows whose logits are averaged
// (`--long_inputs=window`), then the label(s) or the score.
import { argmax, pack, packedRow, softmax } from "./text.js";

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

export function answer(model, values) {
  return classify(model.head, model.rules, model.tokenizer, values, model.run);
}
