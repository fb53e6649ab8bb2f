// What every decoder of the web bundle shares: the serving graph's text rules
// (albert_tf/steps/text_limit.py), packing (steps/packing.py) and the padding of a
// batch's answers as `serving_default` pads them. No browser API is used: Node runs
// it too (tests/web/check_decode.mjs).
//
// A decoder (decoder.js in the bundle: the serving module's own, see
// albert_tf/export/formats/web/assets/decoder_*.js) exports `answer(model, values)`: one
// row's answer from its inputs (one value per name of head.inputs), where
// `model` has `head` (head.json), `rules` (a TextRules), `tokenizer` and
// `run(packed)`, async: {token_ids, segment_ids, padding_mask[, p_mask]}
// Int32Array(max_seq_length) each -> {output name: typed array (row-major)}.
// It may export `predict(model, data)` too, for a batch (columns of inputs)
// whose rows must be shaped alike first. Offsets and spans are code point
// indices, as in the Python outputs.

// Code points of a string; lone surrogates become U+FFFD (as tokenizer.js reads them).
export function codePoints(text) {
  const out = [];
  for (const ch of String(text)) {
    const cp = ch.codePointAt(0);
    out.push(cp >= 0xd800 && cp < 0xe000 ? 0xfffd : cp);
  }
  return out;
}

export function inRanges(ranges, cp) {  // ranges: sorted [first, last] runs
  let lo = 0, hi = ranges.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (cp < ranges[mid][0]) hi = mid - 1;
    else if (cp > ranges[mid][1]) lo = mid + 1;
    else return true;
  }
  return false;
}

export function argmax(values, from = 0, count = values.length) {
  let best = 0;  // the first of equal maxima, as tf.argmax
  for (let i = 1; i < count; i++) if (values[from + i] > values[from + best]) best = i;
  return best;
}

export function padRows(rows, fill) {
  const width = Math.max(0, ...rows.map((r) => r.length));
  return rows.map((r) => r.concat(new Array(width - r.length).fill(fill)));
}

// The graph's text rules: head.text of head.json, and the task's word classes.
export class TextRules {
  constructor(text) {
    this.rules = text;
    this.standalone = text.standalone;  // CJK ideographs and ASCII punctuation
    this.punctuation = text.punctuation;
    this.solidWhitespace = text.solid_whitespace;
  }

  // A CJK ideograph or punctuation (`token_classification.is_standalone`).
  isStandalone(cp) {
    return cp >= 0 && (inRanges(this.standalone, cp) || inRanges(this.punctuation, cp));
  }

  isSolid(cp) { return !inRanges(this.solidWhitespace, cp); }

  // `text_limit.cut`: the text cut to the characters giving its first (or
  // last) `tokens` tokens; returned as given when nothing is cut.
  cut(text, tokens, keep = "first") {
    const r = this.rules;
    const limit = Math.max((tokens + 1) * r.max_token_chars, (r.max_word_chars || 0) + 1);
    const codes = codePoints(text);
    const weight = codes.map((cp) => {
      if (inRanges(r.whitespace, cp)) return 0;
      return r.standalone_words && this.isStandalone(cp) ? r.max_token_chars : 1;
    });
    const cap = r.whitespace_cap * limit;
    const kept = new Array(codes.length);
    if (keep === "first") {
      let before = 0;
      codes.forEach((_, i) => { kept[i] = before < limit && i < cap; before += weight[i]; });
    } else {
      let after = 0;
      for (let i = codes.length - 1; i >= 0; i--) {
        kept[i] = after < limit && codes.length - 1 - i < cap;
        after += weight[i];
      }
    }
    if (kept.every((k) => k)) return text;
    return String.fromCodePoint(...codes.filter((_, i) => kept[i]));
  }
}

// [CLS] a [SEP] (b [SEP]) padded to maxSeqLength, as SegmentPacker packs
// (the longer side loses tokens first, the first segment keeps at least half).
export function pack(idsA, idsB, maxSeqLength, special) {
  let tokens, segments;
  if (idsB === null) {
    tokens = [special.cls, ...idsA.slice(0, maxSeqLength - 2), special.sep];
    segments = tokens.map(() => 0);
  } else {
    const budget = maxSeqLength - 3;
    let keepA = idsA.length, keepB = idsB.length;
    if (keepA + keepB > budget) {
      keepA = Math.min(keepA, Math.max(budget - keepB, Math.floor((budget + 1) / 2)));
      keepB = budget - keepA;
    }
    const first = [special.cls, ...idsA.slice(0, keepA), special.sep];
    const second = [...idsB.slice(0, keepB), special.sep];
    tokens = first.concat(second);
    segments = first.map(() => 0).concat(second.map(() => 1));
  }
  return packedRow(tokens, segments, maxSeqLength, special);
}

export function packedRow(tokens, segments, maxSeqLength, special) {
  const tokenIds = new Int32Array(maxSeqLength).fill(special.pad);
  const segmentIds = new Int32Array(maxSeqLength);
  const paddingMask = new Int32Array(maxSeqLength);
  tokens.forEach((t, i) => { tokenIds[i] = t; segmentIds[i] = segments[i]; paddingMask[i] = 1; });
  return { token_ids: tokenIds, segment_ids: segmentIds, padding_mask: paddingMask };
}

export function softmax(row) {
  const top = Math.max(...row);
  const e = row.map((x) => Math.exp(x - top));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / sum);
}

// Rows of one answer each -> serving_default's columns; the per-entity and
// per-token lists padded to the batch's longest as the graph pads them
// ("" for strings, -1 for offsets).
export function columns(rows) {
  const out = {};
  for (const key of rows.length ? Object.keys(rows[0]) : []) {
    const values = rows.map((r) => r[key]);
    const listed = Array.isArray(values[0]) && /^(entity|token)_/.test(key);
    out[key] = listed ? padRows(values, /_(type|text|tag)$/.test(key) ? "" : -1) : values;
  }
  return out;
}
