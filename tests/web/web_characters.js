// The character vocabulary type of tests/test_vocabulary_plugin.py in the browser
// (its `web_tokenizer`): one id per character but whitespace, each spanning its
// code point, as its host tokenizer gives them.
export async function load(tables, vocabulary) {
  const tokens = new TextDecoder().decode(vocabulary).split("\n").slice(1, -1);
  const ids = new Map(tokens.map((t, i) => [t, i]));
  const whitespace = new Set(tables.whitespace);
  return {
    special: tables.special,
    tokenize(text) {
      const out = { ids: [], offsets: [] };
      let i = 0;
      for (const ch of String(text)) {
        let cp = ch.codePointAt(0);
        if (cp >= 0xd800 && cp < 0xe000) cp = 0xfffd;
        const c = String.fromCodePoint(cp);
        const lower = tables.lowercase ? c.toLowerCase() : c;
        if (!whitespace.has(cp)) {
          out.ids.push(ids.has(lower) ? ids.get(lower) : tables.special.unk);
          out.offsets.push([i, i + 1]);
        }
        i++;
      }
      return out;
    },
  };
}
