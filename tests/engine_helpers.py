"""A toy task for engine tests: is token 5 in the sequence? (no tokenizer needed)."""

import numpy as np
import tensorflow as tf

from albert_tf.backbone import AlbertBackbone
from albert_tf.data import Features, padded_length
from albert_tf.models import AlbertClassifier
from albert_tf.training.optimizers import create_optimizer
from albert_tf.training.settings import FinetuneSettings
from helpers import tiny_config

MAX_LEN = 16


def toy_features(n=48, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, MAX_LEN + 1, n)
    tokens = np.zeros((n, MAX_LEN), np.int32)
    labels = np.zeros(n, np.int32)
    for i, length in enumerate(lengths):
        tokens[i, :length] = rng.integers(6, 11, length)
        tokens[i, 0] = 2
        if i % 2:
            tokens[i, rng.integers(1, length)] = 5
            labels[i] = 1
    return Features({"token_ids": tokens, "segment_ids": np.zeros_like(tokens),
                     "label": labels}, lengths, ("label",))


def toy_settings(tmp_path, **changes):
    values = dict(task="toy", output_dir=str(tmp_path), train_steps=12, warmup_steps=2,
                  batch_size=4, learning_rate=1e-3, checkpoint_every=4, max_seq_length=MAX_LEN,
                  dropout=0.1, log_every=2)
    values.update(changes)
    return FinetuneSettings(**values)


def toy_model(settings, strategy=None, seed=0):
    import keras

    strategy = strategy or tf.distribute.OneDeviceStrategy("/cpu:0")
    keras.utils.set_random_seed(seed)
    with strategy.scope():
        backbone = AlbertBackbone(tiny_config(max_sequence_length=MAX_LEN, dropout=settings.dropout),
                                  recompute=settings.recompute)
        model = AlbertClassifier(backbone, 2, dropout=settings.classifier_dropout)
        model.compile(optimizer=create_optimizer(
            "adamw", settings.learning_rate, settings.train_steps, settings.warmup_steps,
            accumulation_steps=settings.accumulation_steps))
    return model, strategy


def batch_length(lengths):
    return padded_length(lengths, MAX_LEN, multiple=4)


def toy_dataset(strategy, settings, features=None):
    from albert_tf.training import engine

    return engine.planned_dataset(strategy, features or toy_features(), settings, batch_length)
