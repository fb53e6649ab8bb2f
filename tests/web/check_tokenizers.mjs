// node check_tokenizers.mjs TABLES VOCAB CASES: tokenizes every case's text
// with tokenizer.js and prints {"checked": n, "mismatches": [...]} comparing
// ids and offsets with the case's (the Python host tokenizer's).
import fs from "fs";
import path from "path";
import { fileURLToPath } from "url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const { SentencePieceTokenizer, WordPieceTokenizer } = await import(
  path.join(root, "albert_tf/export/web_assets/tokenizer.js"));
const [tablesPath, vocabPath, casesPath] = process.argv.slice(2);
const tables = JSON.parse(fs.readFileSync(tablesPath, "utf8"));
let tokenizer;
if (tables.type === "sentencepiece") {
  const { SentencePieceProcessor } = await import(
    path.join(root, "node_modules/@sctg/sentencepiece-js/dist/index.js"));
  const sp = new SentencePieceProcessor();
  await sp._loadModel(fs.readFileSync(vocabPath));
  tokenizer = new SentencePieceTokenizer(tables, sp);
} else {
  const tokens = fs.readFileSync(vocabPath, "utf8").split("\n");
  if (tokens[tokens.length - 1] === "") tokens.pop();
  tokenizer = new WordPieceTokenizer(tables, tokens);
}
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
