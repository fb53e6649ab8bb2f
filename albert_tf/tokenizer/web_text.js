// What the web bundle's tokenizers share (tokenizer_text.js in the bundle):
// Python's Final_Sigma rule, the tables' compact lists, code points and lengths.
// Each vocabulary type's tokenizer (tokenizer.js in the bundle) gives the same
// ids and character offsets (code point indices into the input) as its host
// tokenizer; every Unicode property comes from the tables the export writes
// (the type's `web_tables`), never from the browser's own Unicode functions.

export const TRANSPARENT = 0, CASED = 1, OTHER = 2;
export const CAPITAL_SIGMA = 0x3a3, SMALL_SIGMA = 0x3c3, FINAL_SIGMA = 0x3c2;

// Python's Final_Sigma rule for the capital sigma at i of n code points: a cased
// character before it and none after it, case-ignorable ones (TRANSPARENT) skipped.
// left(j) / right(k): the class a character shows to what follows / precedes it.
export function isFinalSigma(i, n, left, right) {
  let j = i - 1;
  while (j >= 0 && left(j) === TRANSPARENT) j--;
  let k = i + 1;
  while (k < n && right(k) === TRANSPARENT) k++;
  return j >= 0 && left(j) === CASED && !(k < n && right(k) === CASED);
}
export const UNDERLINE = "\u2581";

export function undelta(values) {
  const out = new Array(values.length);
  let last = 0;
  for (let i = 0; i < values.length; i++) out[i] = last += values[i];
  return out;
}

// The last k with starts[k] <= cp.
export function rangeIndex(starts, cp) {
  let lo = 0, hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= cp) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// Code points of a string; lone surrogates become U+FFFD (as Python's to_text).
export function codePoints(text) {
  const out = [];
  for (const ch of String(text)) {
    const cp = ch.codePointAt(0);
    out.push(cp >= 0xd800 && cp < 0xe000 ? 0xfffd : cp);
  }
  return out;
}

export function utf8Length(str) {
  let n = 0;
  for (const ch of str) {
    const cp = ch.codePointAt(0);
    n += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  }
  return n;
}

export function cpLength(str) {
  let n = 0;
  for (const _ of str) n++;  // eslint-disable-line no-unused-vars
  return n;
}

// First j > i (strict) or j >= i with flags[j]; flags.length if none.
export function nextTrue(flags, strict) {
  const out = new Array(flags.length);
  let following = flags.length;
  for (let i = flags.length - 1; i >= 0; i--) {
    if (strict) out[i] = following;
    if (flags[i]) following = i;
    if (!strict) out[i] = following;
  }
  return out;
}
