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


def assert_close_at_scale(actual, desired, tolerance=1e-4, name=""):
    """Equal within `tolerance` times the largest magnitude in `desired`: sums
    taken in another order (a gradient summed layer by layer instead of all at
    once) differ by rounding at the scale of their largest terms."""
    actual, desired = np.asarray(actual), np.asarray(desired)
    np.testing.assert_allclose(actual, desired, rtol=0,
                               atol=tolerance * max(1.0, np.abs(desired).max()), err_msg=name)


def reference(name):
    """(inputs, expected) of a reference model in tests/fixtures."""
    import os

    from conftest import REFERENCE_MODELS

    folder = os.path.join(REFERENCE_MODELS, name)
    return (dict(np.load(os.path.join(folder, "inputs.npz"))),
            dict(np.load(os.path.join(folder, "expected.npz"))), folder)


def write_tf1_checkpoint(prefix, tensors):
    """A name-based TF1 checkpoint of `tensors` (name -> array), as Google's scripts wrote."""
    import tensorflow as tf

    with tf.Graph().as_default():
        variables = [tf.compat.v1.Variable(value, name=name) for name, value in tensors.items()]
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saver.save(session, prefix)


def to_google_checkpoint(model, folder, head_kind=None):
    """Writes `model` (backbone + task head) in Google's TF1 layout into `folder`."""
    import json
    import os

    from albert_tf import config as config_lib
    from albert_tf.checkpoints import google
    from albert_tf.checkpoints.weights import from_ours, model_variables

    variables = model_variables(model)
    entries = google.entries(model.config, heads=False)
    if head_kind:
        entries += google.head_entries(head_kind)
    tensors = {e.key: from_ours(variables[e.name].numpy(), e.layout) for e in entries}
    tensors["global_step"] = np.int64(1234)
    os.makedirs(folder, exist_ok=True)
    write_tf1_checkpoint(os.path.join(folder, "model.ckpt-best"), tensors)
    with open(os.path.join(folder, "albert_config.json"), "w") as f:
        json.dump(config_lib.to_google_json(model.config), f)
    return folder
