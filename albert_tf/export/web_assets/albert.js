// albert_tf's web export, in the browser: raw text in, the SavedModel's
// serving_default answer out, on LiteRT.js (WebAssembly) with no network.
//
//   import { load } from "./albert.js";
//   const model = await load("./");            // the bundle's folder
//   model.tokenize("Some text")                // {ids, offsets}
//   await model.predict({text: ["Some text"]}) // as serving_default
//
// Offsets are [start, end) code point indices into the text, as the Python
// tokenizers give them.
import { loadLiteRt, loadAndCompile, Tensor } from "./runtime/litert.js";
import { SentencePieceProcessor } from "./runtime/sentencepiece.js";
import { SentencePieceTokenizer, WordPieceTokenizer } from "./tokenizer.js";

export { SentencePieceTokenizer, WordPieceTokenizer };

let runtime = null;  // LiteRT.js loads once per page

async function fetchOk(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response;
}

function truncatedLengths(lenA, lenB, budget) {
  if (lenA + lenB <= budget) return [lenA, lenB];
  const keepA = Math.min(lenA, Math.max(budget - lenB, Math.floor((budget + 1) / 2)));
  return [keepA, budget - keepA];
}

// [CLS] a [SEP] (b [SEP]) padded to maxSeqLength, as the export packs.
export function pack(idsA, idsB, maxSeqLength, special) {
  let tokens, segments;
  if (idsB === null) {
    tokens = [special.cls, ...idsA.slice(0, maxSeqLength - 2), special.sep];
    segments = tokens.map(() => 0);
  } else {
    const [keepA, keepB] = truncatedLengths(idsA.length, idsB.length, maxSeqLength - 3);
    const first = [special.cls, ...idsA.slice(0, keepA), special.sep];
    const second = [...idsB.slice(0, keepB), special.sep];
    tokens = first.concat(second);
    segments = first.map(() => 0).concat(second.map(() => 1));
  }
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

class AlbertModel {
  constructor(head, tokenizer, compiled) {
    this.head = head;
    this.tokenizer = tokenizer;
    this.compiled = compiled;
  }

  get inputs() { return this.head.inputs; }

  tokenize(text) {
    return this.tokenizer.tokenize(text);
  }

  // The model's logits of one packed example (batch 1).
  async logits(packed) {
    const inputs = {};
    const length = this.head.max_seq_length;
    for (const name of this.head.token_inputs) inputs[name] = new Tensor(packed[name], [1, length]);
    let outputs;
    try {
      outputs = await this.compiled.run("encoded", inputs);
    } finally {
      for (const t of Object.values(inputs)) t.delete();
    }
    const names = Object.keys(outputs);
    const tensor = outputs.logits || outputs[names[0]];
    const values = Array.from(tensor.toTypedArray());
    for (const t of Object.values(outputs)) t.delete();
    return values;
  }

  decode(logits) {
    const head = this.head;
    if (head.kind === "regression") return { score: logits[0] };
    if (head.kind === "multi_label") {
      const probabilities = logits.map((x) => 1 / (1 + Math.exp(-x)));
      const predicted = probabilities.map((p) => p >= head.threshold);
      const chosen = head.labels.filter((_, i) => predicted[i]);
      const labels = chosen.concat(head.labels.slice(chosen.length).map(() => ""));
      return { probabilities, predicted, labels, num_predicted: chosen.length };
    }
    let best = 0;
    logits.forEach((x, i) => { if (x > logits[best]) best = i; });
    return { label: head.labels[best], label_id: best, probabilities: softmax(logits) };
  }

  // inputs: {name: [texts]} (or {name: text}) for the head's inputs; the
  // answer has serving_default's keys, one entry per text.
  async predict(inputs) {
    const names = this.head.inputs;
    const columns = names.map((name) => {
      if (!(name in inputs)) throw new Error(`predict: missing input ${JSON.stringify(name)}`);
      return Array.isArray(inputs[name]) ? inputs[name] : [inputs[name]];
    });
    const size = columns[0].length;
    if (columns.some((c) => c.length !== size)) throw new Error("predict: inputs of different lengths");
    const rows = [];
    for (let r = 0; r < size; r++) {
      const ids = columns.map((c) => this.tokenizer.tokenize(String(c[r])).ids);
      const packed = pack(ids[0], ids.length > 1 ? ids[1] : null, this.head.max_seq_length,
        this.tokenizer.special);
      rows.push(this.decode(await this.logits(packed)));
    }
    const out = {};
    for (const key of rows.length ? Object.keys(rows[0]) : []) out[key] = rows.map((row) => row[key]);
    return out;
  }
}

export async function load(url = new URL(".", import.meta.url)) {
  let base = new URL(url, typeof location === "undefined" ? import.meta.url : location.href).href;
  if (!base.endsWith("/")) base += "/";
  const head = await (await fetchOk(base + "head.json")).json();
  const tables = await (await fetchOk(base + "tokenizer.json")).json();
  const vocabulary = await fetchOk(base + head.vocabulary);
  let tokenizer;
  if (tables.type === "sentencepiece") {
    const processor = new SentencePieceProcessor();
    await processor._loadModel(new Uint8Array(await vocabulary.arrayBuffer()));
    tokenizer = new SentencePieceTokenizer(tables, processor);
  } else {
    const tokens = (await vocabulary.text()).split("\n");
    if (tokens[tokens.length - 1] === "") tokens.pop();
    tokenizer = new WordPieceTokenizer(tables, tokens);
  }
  if (runtime === null) runtime = loadLiteRt(base + "runtime/wasm/");
  await runtime;
  const compiled = await loadAndCompile(base + head.model, { accelerator: "wasm" });
  return new AlbertModel(head, tokenizer, compiled);
}
