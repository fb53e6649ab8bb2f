// node check_tokenizers.mjs BUNDLE CASES: loads the web bundle's tokenizer from the
// folder BUNDLE (tokenizer.js, its tables tokenizer.json and the vocabulary file
// head.json names, as albert_tf.export.web.write_tokenizer writes them), tokenizes
// every case's text and prints {"checked": n, "mismatches": [...]} comparing ids and
// offsets with the case's (the Python host tokenizer's).
import fs from "fs";
import path from "path";

const [bundle, casesPath, vocabularyName] = process.argv.slice(2);
const { load } = await import(path.resolve(bundle, "tokenizer.js"));
const tables = JSON.parse(fs.readFileSync(path.join(bundle, "tokenizer.json"), "utf8"));
const tokenizer = await load(tables, new Uint8Array(fs.readFileSync(path.join(bundle, vocabularyName))));
const mismatches = [];
let checked = 0;
for (const line of fs.readFileSync(casesPath, "utf8").split("\n")) {
  if (!line) continue;
  const { text, ids, offsets } = JSON.parse(line);
  const got = tokenizer.tokenize(text);
  checked++;
  if (JSON.stringify(got.ids) !== JSON.stringify(ids)
      || JSON.stringify(got.offsets) !== JSON.stringify(offsets)) {
    mismatches.push({ text, ids, offsets, got });
  }
}
console.log(JSON.stringify({ checked, mismatches: mismatches.slice(0, 5), failed: mismatches.length }));
