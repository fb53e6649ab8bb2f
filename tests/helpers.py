"""Tiny models and inputs with all-different dimensions (a swapped axis fails)."""

import numpy as np

from albert_tf.config import AlbertConfig

BATCH, SEQ = 3, 7


def tiny_config(**overrides):
    values = dict(vocabulary_size=11, num_layers=3, num_heads=2, hidden_dim=6,
                  intermediate_dim=10, embedding_dim=4, max_sequence_length=9)
    values.update(overrides)
    return AlbertConfig(**values)


def tiny_inputs(seed=0, vocabulary_size=11, batch=BATCH, seq=SEQ):
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(0, vocabulary_size, (batch, seq)).astype("int32")
    segment_ids = (np.arange(seq)[None] >= seq // 2).astype("int32").repeat(batch, 0)
    padding_mask = np.ones((batch, seq), "int32")
    padding_mask[1, seq - 2:] = 0
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}


def reference(name):
    """(inputs, expected) of a reference model in tests/fixtures."""
    import os

    from conftest import REFERENCE_MODELS

    folder = os.path.join(REFERENCE_MODELS, name)
    return (dict(np.load(os.path.join(folder, "inputs.npz"))),
            dict(np.load(os.path.join(folder, "expected.npz"))), folder)
