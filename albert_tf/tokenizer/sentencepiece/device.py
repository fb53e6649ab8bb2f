"""A SentencePiece model for phone runtimes, which apply only the model's own normalizer."""


def device_model(tokenizer):
    """The serialized model of a host `tokenizer` (bytes)."""
    return tokenizer.vocab.file_bytes()
