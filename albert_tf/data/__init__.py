"""Input pipelines: featurized examples to length-aware, distributed batches."""

from albert_tf.data.batching import bucket_lengths, eval_batches, padded_length, train_batches
from albert_tf.data.features import Features, new_array
from albert_tf.data.pipeline import distributed_dataset

__all__ = ["Features", "bucket_lengths", "distributed_dataset", "eval_batches", "new_array",
           "padded_length", "train_batches"]
