"""A SentencePiece model whose own normalizer does ALBERT's preprocessing.

Phone runtimes (MediaPipe, the TFLite Task Library) run the stock SentencePiece
tokenizer, which applies only the normalizer stored in the model
(`normalizer_spec.precompiled_charsmap`, a character map matched longest
first). ALBERT's host path applies `preprocess_text` (whitespace collapsing, the
quote pairs, NFKD, dropping combining marks, lowercasing) and then that
normalizer. The device model's map is the composition of the two, compiled by
the `sentencepiece` package itself (`SentencePieceNormalizer(norm_map=...)`):

- each whitespace character of Python's `str.split` -> " " (SentencePiece then
  collapses and strips spaces, as `preprocess_text` does);
- "``" and "''" -> '"';
- each character that `preprocess_text` changes -> the model's normalization of
  what it becomes (`normalization.mapping_table`);
- the model's own rules for everything else (a rule of several characters is kept
  when preprocessing leaves its characters alone).

ALBERT's digit-comma rule, applied to the pieces after SentencePiece
(`vocab.digit_comma_replacements`: "▁12," becomes "▁12" ","), is carried by the
pieces: each piece it re-splits is marked unused, so that SentencePiece never
chooses it and segments the digits and the comma apart (the same ids on every
text tested: tests/test_phone_export.py, bench/phone_agreement.py).

Not expressible in a character map, so not on the device: the context of the final
sigma (a capital sigma becomes "σ" everywhere, "ς" never).
"""

from sentencepiece import SentencePieceNormalizer
from sentencepiece import sentencepiece_model_pb2

from albert_tf.tokenizer.normalization import mapping_table, whitespace_code_points

QUOTE_PAIRS = {"``": '"', "''": '"'}


def _model_normalizer(proto):
    """The model's character map alone: no whitespace handling, no dummy prefix."""
    return SentencePieceNormalizer(model_proto=proto, add_dummy_prefix=False,
                                   escape_whitespaces=False, remove_extra_whitespaces=False)


def composed_map(proto, lowercase):
    """`{source: target}`: preprocessing, then the model's normalizer."""
    normalizer = _model_normalizer(proto)
    rules = dict(normalizer.decompile())
    table = mapping_table(bool(lowercase))
    changed = {chr(cp): emission for cp, emission in zip(table.keys, table.emissions)}
    spaces = [chr(cp) for cp in whitespace_code_points()]
    changed.update({c: " " for c in spaces})
    # Keep a model rule only where preprocessing leaves each of its characters alone.
    composed = {src: trg for src, trg in rules.items()
                if not any(c in changed for c in src)}
    sources = list(changed)
    targets = normalizer.normalize([changed[c] for c in sources])
    composed.update(zip(sources, targets))
    composed.update({c: " " for c in spaces})  # not escaped: collapsed by the model's rule
    composed.update(QUOTE_PAIRS)
    # A source that maps to itself needs no rule.
    return {src: trg for src, trg in composed.items() if src != trg}


def device_model(tokenizer):
    """The serialized SentencePiece model of a host `tokenizer` whose normalizer
    does ALBERT's preprocessing (bytes); the pieces, their ids and scores unchanged."""
    proto = tokenizer.vocab.file_bytes()
    model = sentencepiece_model_pb2.ModelProto()
    model.ParseFromString(proto)
    spec = model.normalizer_spec
    compiled = SentencePieceNormalizer(
        norm_map=sorted(composed_map(proto, tokenizer.lowercase).items()),
        add_dummy_prefix=spec.add_dummy_prefix, escape_whitespaces=spec.escape_whitespaces,
        remove_extra_whitespaces=spec.remove_extra_whitespaces)
    new_spec = sentencepiece_model_pb2.NormalizerSpec()
    new_spec.ParseFromString(compiled.serialized_normalizer_spec())
    spec.name = "albert_preprocess"
    spec.precompiled_charsmap = new_spec.precompiled_charsmap
    # The digit-comma rule re-splits each piece ending in a digit and ",": such a
    # piece, marked unused, is never chosen (its id stays, unproduced).
    for index in tokenizer.vocab.digit_comma_replacements():
        model.pieces[index].type = sentencepiece_model_pb2.ModelProto.SentencePiece.UNUSED
    return model.SerializeToString()
