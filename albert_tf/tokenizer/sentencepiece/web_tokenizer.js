// SentencePiece vocabularies in the browser (tokenizer.js in the web bundle): ALBERT's
// preprocessing (the export's tables), the real SentencePiece library compiled to
// WebAssembly (@sctg/sentencepiece-js), the digit-comma rule and the offsets.
import { SentencePieceProcessor } from "./runtime/sentencepiece.js";
import {
  TRANSPARENT, OTHER, FINAL_SIGMA, isFinalSigma, UNDERLINE, undelta, rangeIndex,
  codePoints, utf8Length, cpLength, nextTrue
} from "./tokenizer_text.js";

export class SentencePieceTokenizer {
  // tables: web.py's tokenizer tables; processor: a loaded
  // SentencePieceProcessor of @sctg/sentencepiece-js (encodeIds, encodePieces).
  constructor(tables, processor) {
    this.lowercase = tables.lowercase;
    this.special = tables.special;
    this.sp = processor;
    this.spaces = new Set(undelta(tables.whitespace));
    const keys = undelta(tables.mapping.keys);
    const emissions = tables.mapping.emissions.split("\0");
    const sigma = new Set(tables.mapping.sigma);
    this.mapping = new Map();
    for (let k = 0; k < keys.length; k++) {
      const edge = tables.mapping.edges.charCodeAt(k) - 48;
      this.mapping.set(keys[k], [emissions[k], Math.floor(edge / 3), edge % 3, sigma.has(keys[k])]);
    }
    this.caseStarts = undelta(tables.case.starts);
    this.caseClasses = Array.from(tables.case.classes, (c) => c.charCodeAt(0) - 48);
    this.rules = new Map(Object.entries(tables.digit_comma).map(([k, v]) => [Number(k), v]));
    this.pieceNorm = new Map();
  }

  caseClass(cp) {
    return this.caseClasses[rangeIndex(this.caseStarts, cp)];
  }

  // What each code point becomes under ALBERT's preprocess_text.
  emissions(cps) {
    const spaces = this.spaces;
    let first = cps.length, last = -1;
    for (let i = 0; i < cps.length; i++) {
      if (!spaces.has(cps[i])) { if (first === cps.length) first = i; last = i; }
    }
    const out = new Array(cps.length);
    for (let i = 0; i < cps.length; i++) {
      const cp = cps[i];
      if (spaces.has(cp)) {
        out[i] = first < i && i < last && !spaces.has(cps[i - 1]) ? " " : "";
      } else {
        const hit = this.mapping.get(cp);
        out[i] = hit ? hit[0] : String.fromCodePoint(cp);
      }
    }
    // "``" and "''" become '"', pairs left to right within each run.
    for (let i = 0; i < cps.length;) {
      const cp = cps[i];
      if (cp !== 0x60 && cp !== 0x27) { i++; continue; }
      let j = i;
      while (j < cps.length && cps[j] === cp) j++;
      for (let k = i; k + 1 < j; k += 2) { out[k] = '"'; out[k + 1] = ""; }
      i = j;
    }
    if (this.lowercase) this.finalSigma(cps, out);
    return out;
  }

  edgeClasses(cps, out, i) {
    const cp = cps[i];
    if (this.spaces.has(cp) || ((cp === 0x60 || cp === 0x27) && out[i] !== String.fromCodePoint(cp))) {
      const cls = out[i] ? OTHER : TRANSPARENT;
      return [cls, cls];
    }
    const hit = this.mapping.get(cp);
    if (hit) return [hit[1], hit[2]];
    const cls = this.caseClass(cp);
    return [cls, cls];
  }

  finalSigma(cps, out) {
    for (let i = 0; i < cps.length; i++) {
      const hit = this.mapping.get(cps[i]);
      if (!hit || !hit[3]) continue;
      const left = (j) => this.edgeClasses(cps, out, j)[1];
      const right = (k) => this.edgeClasses(cps, out, k)[0];
      if (isFinalSigma(i, cps.length, left, right)) out[i] = String.fromCodePoint(FINAL_SIGMA);
    }
  }

  preprocess(text) {
    return this.emissions(codePoints(text)).join("");
  }

  // SentencePiece's own normalization of a short string (its pieces joined,
  // without the dummy prefix).
  normalizeBySpm(str) {
    let n = this.pieceNorm.get(str);
    if (n === undefined) {
      // Between two "a"s, whitespace it becomes is neither leading nor trailing.
      n = this.sp.encodePieces("a" + str + "a").join("");
      n = n.slice(n.startsWith(UNDERLINE) ? 2 : 1, -1);
      if (this.pieceNorm.size > 65536) this.pieceNorm.clear();
      this.pieceNorm.set(str, n);
    }
    return n;
  }

  // [ids, begins, ends]: the pieces of the normalized text with their byte
  // ranges in it (what SentencePiece's proto output gives in Python).
  encodePieces(normalized) {
    const ids = this.sp.encodeIds(normalized);
    const pieces = this.sp.encodePieces(normalized);
    if (ids.length !== pieces.length) throw new Error("SentencePiece ids and pieces disagree");
    const chars = Array.from(normalized);
    const byteOf = [];
    let b = 0;
    for (const ch of chars) { byteOf.push(b); b += utf8Length(ch); }
    const total = b;
    // Source byte of each code point of the joined pieces.
    const joined = Array.from(pieces.join(""));
    const source = new Array(joined.length).fill(total);
    let q = 0;
    // The dummy prefix stands where SentencePiece stopped skipping leading
    // characters that normalize to a space.
    let lead = 0;
    while (lead < chars.length && (chars[lead] === " " || this.normalizeBySpm(chars[lead]) === UNDERLINE)) lead++;
    if (joined[0] === UNDERLINE) source[q++] = lead < chars.length ? byteOf[lead] : total;
    for (let i = 0; i < chars.length && q < joined.length;) {
      if (chars[i] === " ") {
        if (joined[q] === UNDERLINE) source[q++] = byteOf[i];
        i++;
        continue;
      }
      let matched = false;
      for (let j = i + 1; j <= Math.min(chars.length, i + 8) && !matched; j++) {
        let n = Array.from(this.normalizeBySpm(chars.slice(i, j).join("")));
        // Whitespace next to whitespace (or at the start) was collapsed away.
        if (n.length && n.every((c) => c === UNDERLINE) && joined[q] !== UNDERLINE) n = [];
        if (n.every((c, k) => joined[q + k] === c)) {
          for (let k = 0; k < n.length; k++) source[q + k] = byteOf[i];
          q += n.length;
          i = j;
          matched = true;
        }
      }
      if (!matched) { source[q++] = byteOf[i]; i++; }
    }
    const begins = [], ends = [];
    let position = 0;
    for (let p = 0; p < pieces.length; p++) {
      const length = cpLength(pieces[p]);
      begins.push(source[position]);
      position += length;
      ends.push(p + 1 < pieces.length ? source[position] : total);
    }
    return [ids, begins, ends];
  }

  expand(index, begin, end) {
    const rule = this.rules.get(index);
    if (rule === undefined) return [[index, begin, end]];
    return rule.map(([newIndex, offset, width]) => offset === -2
      ? [newIndex, end - 1, end]
      : [newIndex, Math.min(begin + offset, end - 1), Math.min(begin + offset + width, end - 1)]);
  }

  // {ids, offsets}: offsets[i] = [start, end), code point indices into text.
  tokenize(text) {
    const cps = codePoints(text);
    const emissions = this.emissions(cps);
    const widths = emissions.map(utf8Length);
    const charByte = [];
    let total = 0;
    for (const w of widths) { charByte.push(total); total += w; }
    const anchor = widths.map((w, i) => w > 0 || this.spaces.has(cps[i]));
    const solid = widths.map((w, i) => w > 0 && emissions[i] !== " ");
    const nextAnchor = nextTrue(anchor, true), nextSolid = nextTrue(solid, false);
    const owner = (byte) => rangeIndex(charByte, byte);
    const trim = (begin, end) => {
      if (begin >= end) return begin;
      const j = nextSolid[owner(begin)];
      const firstSolid = j < cps.length ? charByte[j] : total;
      return Math.min(end, Math.max(begin, firstSolid));
    };
    const span = (begin, end) => {
      if (begin >= end) {
        const start = begin < total ? owner(begin) : cps.length;
        return [start, start];
      }
      return [owner(begin), nextAnchor[owner(end - 1)]];
    };
    const ids = [], offsets = [];
    if (total === 0) return { ids, offsets };
    const [pieceIds, begins, ends] = this.encodePieces(emissions.join(""));
    for (let p = 0; p < pieceIds.length; p++) {
      const begin = trim(begins[p], ends[p]);
      for (const [index, b, e] of this.expand(pieceIds[p], begin, ends[p])) {
        ids.push(index);
        offsets.push(span(b, e));
      }
    }
    return { ids, offsets };
  }
}

// The bundle's tokenizer: `tables` (the type's web tables) and the bytes of the
// .model file.
export async function load(tables, vocabulary) {
  const processor = new SentencePieceProcessor();
  await processor._loadModel(vocabulary);
  return new SentencePieceTokenizer(tables, processor);
}
