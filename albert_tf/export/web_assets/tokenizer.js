// ALBERT's tokenizers in JavaScript, exact: the same ids and character
// offsets (code point indices into the input) as albert_tf's host tokenizers.
// Every Unicode property comes from the tables the export writes
// (albert_tf/export/web.py), never from the browser's own Unicode functions.

const TRANSPARENT = 0, CASED = 1, OTHER = 2;
const CAPITAL_SIGMA = 0x3a3, SMALL_SIGMA = 0x3c3, FINAL_SIGMA = 0x3c2;

// Python's Final_Sigma rule for the capital sigma at i of n code points: a cased
// character before it and none after it, case-ignorable ones (TRANSPARENT) skipped.
// left(j) / right(k): the class a character shows to what follows / precedes it.
function isFinalSigma(i, n, left, right) {
  let j = i - 1;
  while (j >= 0 && left(j) === TRANSPARENT) j--;
  let k = i + 1;
  while (k < n && right(k) === TRANSPARENT) k++;
  return j >= 0 && left(j) === CASED && !(k < n && right(k) === CASED);
}
const UNDERLINE = "\u2581";

function undelta(values) {
  const out = new Array(values.length);
  let last = 0;
  for (let i = 0; i < values.length; i++) out[i] = last += values[i];
  return out;
}

// The last k with starts[k] <= cp.
function rangeIndex(starts, cp) {
  let lo = 0, hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= cp) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// Code points of a string; lone surrogates become U+FFFD (as Python's to_text).
function codePoints(text) {
  const out = [];
  for (const ch of String(text)) {
    const cp = ch.codePointAt(0);
    out.push(cp >= 0xd800 && cp < 0xe000 ? 0xfffd : cp);
  }
  return out;
}

function utf8Length(str) {
  let n = 0;
  for (const ch of str) {
    const cp = ch.codePointAt(0);
    n += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  }
  return n;
}

function cpLength(str) {
  let n = 0;
  for (const _ of str) n++;  // eslint-disable-line no-unused-vars
  return n;
}

// First j > i (strict) or j >= i with flags[j]; flags.length if none.
function nextTrue(flags, strict) {
  const out = new Array(flags.length);
  let following = flags.length;
  for (let i = flags.length - 1; i >= 0; i--) {
    if (strict) out[i] = following;
    if (flags[i]) following = i;
    if (!strict) out[i] = following;
  }
  return out;
}

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
