// node check_decode.mjs CASES: runs the web decoders' text cuts, word starts,
// Viterbi, question windows and long-text windows on CASES (JSON, written by
// tests/test_web_decode.py) and prints their results as one JSON object.
import fs from "fs";
import path from "path";
import { fileURLToPath } from "url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const assets = path.join(root, "albert_tf/export/formats/web/assets");
const { TextRules, codePoints } = await import(path.join(assets, "text.js"));
const { textWindows } = await import(path.join(assets, "decoder_classification.js"));
const { viterbi, wordStarts } = await import(path.join(assets, "decoder_token_classification.js"));
const { questionWindows } = await import(path.join(assets, "decoder_question_answering.js"));
const cases = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const out = {};
out.cut = cases.cut.map(({ rules, text, tokens, keep }) => new TextRules(rules).cut(text, tokens, keep));
out.word_starts = cases.word_starts.map(({ rules, text, offsets }) =>
  wordStarts(codePoints(text), offsets, new TextRules(rules)));
out.viterbi = cases.viterbi.potentials.map((p) => viterbi(p, cases.viterbi.crf));
out.windows = cases.windows.map(({ head, query, context, special }) =>
  questionWindows(head, query, context.length, context, special).map((w) => ({
    token_ids: Array.from(w.packed.token_ids), segment_ids: Array.from(w.packed.segment_ids),
    padding_mask: Array.from(w.packed.padding_mask), p_mask: Array.from(w.packed.p_mask),
    context_token: w.contextToken, is_max_context: w.isMax,
  })));
out.text_windows = cases.text_windows.map(({ a, b, length, stride, special }) =>
  textWindows(a, b, length, stride, special).map((w) => ({
    token_ids: Array.from(w.token_ids), segment_ids: Array.from(w.segment_ids),
    padding_mask: Array.from(w.padding_mask),
  })));
console.log(JSON.stringify(out));
