"""ALBERT tokenization, in-graph (`AlbertTokenizer`) and on the host (`HostTokenizer`).

`load_tokenizer(path, host=False)` (also `albert_tf.load_tokenizer`) returns the
tokenizer of a checkpoint folder, a vocabulary file or a published checkpoint
name; `base` defines the plug point (the tokenizer protocol and the
registry of vocabulary types), `host_base` and `graph_layer` what every host
and in-graph tokenizer is, `sentencepiece` the SentencePiece type,
`wordpiece` the WordPiece type (BERT's `vocab.txt`, Chinese ALBERT's).

Both reproduce google-research/albert `tokenization.py` exactly (tested
against reference ids): `preprocess_text` (collapse whitespace, `` and '' to
", NFKD, drop combining characters, lowercase for uncased models), then
SentencePiece, then the digit-comma rule ("▁1990," -> "▁1990" ","). Then
`SegmentPacker` builds `[CLS] a [SEP] b [SEP]` model inputs.

Offsets (`tokenize_with_offsets`, `encode_with_offsets`) are Unicode code
point indices into the ORIGINAL text, `text[start:end]` being what the token
came from, even where normalization changed lengths:

- A character that normalizes to several (ﬁ -> fi, ½ -> 1⁄2) belongs whole to
  every token made from it, so such tokens may share a span.
- A character that normalizes to nothing (a combining accent, the second "`"
  of "``") belongs to the character before it: "Café" in NFD form spans all
  five code points.
- The whitespace a leading "▁" stands for is not part of the span ("▁world"
  in "hello  world" spans "world"); a piece that is only "▁" gets an empty
  span (start == end) at the start of the text that follows it.
- The digit-comma rule: "," spans the comma; the pieces re-encoded from the
  rest get consecutive spans by their own lengths ("▁1990," -> "1990", ",").
- Invalid UTF-8 is read as U+FFFD (one per maximal invalid subsequence, as
  Python's `errors="replace"`); offsets then index the decoded text.
- Whitespace-only and empty strings give no tokens. Control characters go
  through as SentencePiece's normalizer decides (usually dropped or <unk>).

WordPiece (`WordPieceTokenizer` in-graph, `HostWordPieceTokenizer` on the
host) reproduces google-research/bert's and albert's `FullTokenizer` with a
vocabulary file exactly (tested against reference ids; see `wordpiece.chars`
for the one documented deviation): `BasicTokenizer` (drop control characters,
spaces around CJK ideographs, split on whitespace, for uncased models
`lower()` + NFD + drop accents, punctuation split), then greedy longest-match
WordPiece with "##" continuations; a word of more than 200 characters
(Google's limit; Hugging Face's `BertTokenizer` uses 100) or one the
vocabulary cannot cover is one [UNK]. Offsets, in code points of the
ORIGINAL text:

- A character that lowercasing or NFD turns into one or several (É -> e,
  İ -> i, a Hangul syllable -> its jamo) spans itself, whole, in every token
  made from it.
- A character that emits nothing (an accent that uncased models strip, a
  dropped control or format character such as U+200B) belongs to the
  character before it: "Café" in NFD form spans all five code points; one
  after whitespace belongs to no token.
- [UNK] spans its whole word; whitespace belongs to no token.
- Invalid UTF-8 is read as U+FFFD, as above, which BasicTokenizer drops (the
  ids of the reference's `errors="ignore"` decoding); offsets index the
  decoded text.

Names are imported on first use, so the training CLI starts without TensorFlow.
"""

from albert_tf.lazy import lazy_exports

_EXPORTS = {
    "AlbertTokenizer": "albert_tf.tokenizer.sentencepiece.layer",
    "load_tokenizer": "albert_tf.tokenizer.loading",
    "save_vocabulary": "albert_tf.tokenizer.base",
    "HostTokenizer": "albert_tf.tokenizer.sentencepiece.host",
    "SegmentPacker": "albert_tf.steps.packing",
    "WindowPacker": "albert_tf.steps.windows",
    "window_mean": "albert_tf.steps.windows",
    "preprocess_text": "albert_tf.tokenizer.normalization",
    "train_sentencepiece": "albert_tf.tokenizer.sentencepiece.training",
    "SpmVocab": "albert_tf.tokenizer.sentencepiece.vocab",
    "WordPieceTokenizer": "albert_tf.tokenizer.wordpiece.layer",
    "HostWordPieceTokenizer": "albert_tf.tokenizer.wordpiece.host",
    "WordPieceVocab": "albert_tf.tokenizer.wordpiece.vocab",
    "train_wordpiece": "albert_tf.tokenizer.wordpiece.training",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
