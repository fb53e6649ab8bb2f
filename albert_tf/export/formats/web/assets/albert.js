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
//
// It knows no vocabulary type and no task: the export puts the vocabulary
// type's tokenizer beside it as tokenizer.js (`load(tables, bytes)`) and the
// serving module's decoder as decoder.js (`answer(model, values)`, and
// optionally `predict(model, data)` for a batch; see text.js).
import { loadLiteRt, loadAndCompile, Tensor } from "./runtime/litert.js";
import { load as loadTokenizer } from "./tokenizer.js";
import * as decoder from "./decoder.js";
import { TextRules, columns, pack } from "./text.js";

export { pack };

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

  // inputs: {name: [values]} (or {name: value}) for the head's inputs
  // (multiple choice: `choices` a list of strings per question, "" for none);
  // the answer has serving_default's keys, one entry per row, padded per
  // batch as the SavedModel pads them.
  async predict(inputs) {
    const data = this.head.inputs.map((name) => column(inputs, name));
    const size = data[0].length;
    if (data.some((c) => c.length !== size)) throw new Error("predict: inputs of different lengths");
    if (decoder.predict) return decoder.predict(this, data);
    const answers = [];
    for (let r = 0; r < size; r++) answers.push(await decoder.answer(this, data.map((c) => c[r])));
    return columns(answers);
  }
}

export async function load(url = new URL(".", import.meta.url)) {
  let base = new URL(url, typeof location === "undefined" ? import.meta.url : location.href).href;
  if (!base.endsWith("/")) base += "/";
  const head = await (await fetchOk(base + "head.json")).json();
  const tables = await (await fetchOk(base + "tokenizer.json")).json();
  const vocabulary = await fetchOk(base + head.vocabulary);
  const tokenizer = await loadTokenizer(tables, new Uint8Array(await vocabulary.arrayBuffer()));
  // The bundle's WebAssembly: its folder (LiteRT.js picks a build by the
  // browser's features) or, where the bundle ships one build, that file.
  if (runtime === null) runtime = loadLiteRt(base + head.runtime);
  await runtime;
  const compiled = await loadAndCompile(base + head.model, { accelerator: "wasm" });
  return new AlbertModel(head, tokenizer, compiled);
}
