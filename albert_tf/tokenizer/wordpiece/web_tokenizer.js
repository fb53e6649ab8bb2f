// WordPiece vocabularies in the browser (tokenizer.js in the web bundle): BERT's
// BasicTokenizer on the export's tables, then greedy longest-match WordPiece.
import {
  CAPITAL_SIGMA, SMALL_SIGMA, FINAL_SIGMA, isFinalSigma, undelta, rangeIndex, codePoints,
  cpLength
} from "./tokenizer_text.js";

const KIND_MASK = 3, PUNCT_BIT = 4, CASE_SHIFT = 3;
const NORMAL = 0, BREAK = 1, CJK = 2, DROP = 3;  // eslint-disable-line no-unused-vars
const MAX_WORD_CHARS = 200, CONTINUATION = "##";

export class WordPieceTokenizer {
  // tables: web.py's tokenizer tables; tokens: the vocabulary in id order.
  constructor(tables, tokens) {
    this.lowercase = tables.lowercase;
    this.special = tables.special;
    this.starts = undelta(tables.properties.starts);
    this.values = tables.properties.values;
    const keys = undelta(tables.emission.keys);
    const values = tables.emission.values ? tables.emission.values.split("\0") : [];
    this.emission = new Map(keys.map((k, i) => [k, values[i]]));
    this.ids = new Map(tokens.map((t, i) => [t, i]));
    this.maxTokenChars = Math.max(...tokens.map(cpLength));
    this.unk = tables.special.unk;
  }

  property(cp) {
    return this.values[rangeIndex(this.starts, cp)];
  }

  wordpiece(word) {
    const chars = Array.from(word);
    if (chars.length > MAX_WORD_CHARS) return [[this.unk, chars.length]];
    const pieces = [];
    let start = 0;
    while (start < chars.length) {
      let end = Math.min(chars.length, start + this.maxTokenChars);
      let index;
      while (end > start) {
        const piece = (start === 0 ? "" : CONTINUATION) + chars.slice(start, end).join("");
        index = this.ids.get(piece);
        if (index !== undefined) break;
        end--;
      }
      if (end === start) return [[this.unk, chars.length]];
      pieces.push([index, end - start]);
      start = end;
    }
    return pieces;
  }

  tokenize(text) {
    const cps = codePoints(text);
    const props = cps.map((cp) => this.property(cp));
    const kinds = props.map((p) => p & KIND_MASK);
    const cases = props.map((p) => p >> CASE_SHIFT);
    const emissions = cps.map((cp, i) => {
      const kind = kinds[i];
      if (kind === BREAK || kind === DROP) return "";
      if (!this.lowercase) return String.fromCodePoint(cp);
      if (cp === CAPITAL_SIGMA) {
        const at = (j) => cases[j];
        return String.fromCodePoint(isFinalSigma(i, cps.length, at, at) ? FINAL_SIGMA : SMALL_SIGMA);
      }
      const hit = this.emission.get(cp);
      return hit === undefined ? String.fromCodePoint(cp) : hit;
    });
    const nextAnchor = new Array(cps.length);
    let following = cps.length;
    for (let i = cps.length - 1; i >= 0; i--) {
      nextAnchor[i] = following;
      if (emissions[i] || kinds[i] === BREAK) following = i;
    }
    const words = [];
    let word = [], owners = [];
    const flush = () => { if (word.length) { words.push([word.join(""), owners]); word = []; owners = []; } };
    for (let i = 0; i < cps.length; i++) {
      const kind = kinds[i];
      if (kind === BREAK || kind === CJK) {
        flush();
        if (kind === CJK) words.push([emissions[i], Array.from(emissions[i]).map(() => i)]);
        continue;
      }
      for (const ch of emissions[i]) {
        if (this.property(ch.codePointAt(0)) & PUNCT_BIT) {
          flush();
          words.push([ch, [i]]);
        } else {
          word.push(ch);
          owners.push(i);
        }
      }
    }
    flush();
    const ids = [], offsets = [];
    for (const [w, own] of words) {
      let position = 0;
      for (const [index, length] of this.wordpiece(w)) {
        ids.push(index);
        offsets.push([own[position], nextAnchor[own[position + length - 1]]]);
        position += length;
      }
    }
    return { ids, offsets };
  }
}

// The bundle's tokenizer: `tables` (the type's web tables) and the bytes of vocab.txt.
export async function load(tables, vocabulary) {
  const tokens = new TextDecoder().decode(vocabulary).split("\n");
  if (tokens[tokens.length - 1] === "") tokens.pop();
  return new WordPieceTokenizer(tables, tokens);
}
