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
import { TextRules, answer, choose, classify, columns, pack, tag } from "./decode.js";

export { SentencePieceTokenizer, WordPieceTokenizer, pack };

let runtime = null;  // LiteRT.js loads once per page

async function fetchOk(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response;
}

function column(inputs, name) {
  if (!(name in inputs)) throw new Error(`predict: missing input ${JSON.stringify(name)}`);
  const value = inputs[name];
  return Array.isArray(value) ? value : [value];
}

class AlbertModel {
  constructor(head, tokenizer, compiled) {
    this.head = head;
    this.tokenizer = tokenizer;
    this.compiled = compiled;
    this.rules = new TextRules(head.text);
    this.run = (packed) => this.outputs(packed);
  }

  get inputs() { return this.head.inputs; }

  tokenize(text) {
    return this.tokenizer.tokenize(text);
  }

  // The model's outputs on one packed row (batch 1): {name: typed array}.
  async outputs(packed) {
    const inputs = {};
    const length = this.head.max_seq_length;
    for (const name of this.head.token_inputs) inputs[name] = new Tensor(packed[name], [1, length]);
    let outputs;
    try {
      outputs = await this.compiled.run("encoded", inputs);
    } finally {
      for (const t of Object.values(inputs)) t.delete();
    }
    const values = {};
    for (const [name, tensor] of Object.entries(outputs)) {
      values[name] = tensor.toTypedArray().slice();
      tensor.delete();
    }
    return values;
  }

  // One row's answer from its inputs (one value per input name).
  async answerRow(values) {
    const [head, rules, tok, run] = [this.head, this.rules, this.tokenizer, this.run];
    switch (head.kind) {
      case "token_classification": return tag(head, rules, tok, values[0], run);
      case "question_answering": return answer(head, rules, tok, values[0], values[1], run);
      case "multiple_choice": return choose(head, rules, tok, values[0], values[1], values[2], run);
      default: return classify(head, rules, tok, values, run);
    }
  }

  // inputs: {name: [values]} (or {name: value}) for the head's inputs
  // (multiple choice: `choices` a list of strings per question, "" for none);
  // the answer has serving_default's keys, one entry per row, padded per
  // batch as the SavedModel pads them.
  async predict(inputs) {
    const data = this.head.inputs.map((name) => column(inputs, name));
    const size = data[0].length;
    if (data.some((c) => c.length !== size)) throw new Error("predict: inputs of different lengths");
    if (this.head.kind === "multiple_choice") {  // every question gets the batch's width
      const rows = data[2].map((c) => (Array.isArray(c) ? c.map(String) : [String(c)]));
      const width = Math.max(1, ...rows.map((c) => c.length));
      const wide = rows.map((c) => c.concat(new Array(width - c.length).fill("")));
      data[2] = wide;
      const answers = [];
      for (let r = 0; r < size; r++) answers.push(await this.answerRow(data.map((c) => c[r])));
      const out = columns(answers);
      const given = Math.max(0, ...rows.map((c) => c.length));  // no column: none shown
      if (out.probabilities) out.probabilities = out.probabilities.map((p) => p.slice(0, given));
      return out;
    }
    const answers = [];
    for (let r = 0; r < size; r++) answers.push(await this.answerRow(data.map((c) => c[r])));
    return columns(answers);
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
  // The bundle's WebAssembly: its folder (LiteRT.js picks a build by the
  // browser's features) or, where the bundle ships one build, that file.
  if (runtime === null) runtime = loadLiteRt(base + head.runtime);
  await runtime;
  const compiled = await loadAndCompile(base + head.model, { accelerator: "wasm" });
  return new AlbertModel(head, tokenizer, compiled);
}
