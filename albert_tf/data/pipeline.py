"""`tf.data` pipelines over planned batches, split across replicas.

Every worker runs the same plan; each input pipeline yields, for every global
batch, the per-replica slices of its own replicas, all padded to the global
batch's length. So the global batch is the same under every strategy (one
device, several GPUs, several workers, TPU) and is split evenly across
replicas, as the reference's recipes assume.
"""

import numpy as np
import tensorflow as tf


def _split(batch, label_keys):
    """(inputs, labels) of a batch dict."""
    return ({k: v for k, v in batch.items() if k not in label_keys},
            {k: batch[k] for k in label_keys})


def replica_slices(batch_indices, num_replicas):
    """The global batch's example indices split evenly, one part per replica."""
    if len(batch_indices) % num_replicas:
        raise ValueError(f"the global batch size {len(batch_indices)} is not divisible by "
                         f"the {num_replicas} replicas")
    return np.split(np.asarray(batch_indices), num_replicas)


def distributed_dataset(strategy, features, batches, batch_length, start=0):
    """A distributed dataset of `(inputs, labels)` for `batches[start:]`.

    Args:
        strategy: a `tf.distribute.Strategy`.
        features: `albert_tf.data.Features`.
        batches: list of global batches (arrays of example indices, -1 = padding).
        batch_length: function from a global batch's real lengths to its padded length.
        start: the first batch to yield (a resumed run skips what it has seen).
    """
    num_replicas = strategy.num_replicas_in_sync
    label_keys = tuple(features.label_keys)

    def element(indices, length):
        return _split(features.batch(indices, length), label_keys)

    def global_length(indices):
        real = indices[indices >= 0]
        return batch_length(features.lengths[real])

    signature = _split(features.signature(), label_keys)

    def dataset_fn(context):
        local = num_replicas // context.num_input_pipelines
        mine = range(context.input_pipeline_id * local, (context.input_pipeline_id + 1) * local)

        def generate():
            for indices in batches[start:]:
                length = global_length(np.asarray(indices))
                parts = replica_slices(indices, num_replicas)
                for replica in mine:
                    yield element(parts[replica], length)

        dataset = tf.data.Dataset.from_generator(generate, output_signature=signature)
        return dataset.prefetch(tf.data.AUTOTUNE)

    return strategy.distribute_datasets_from_function(dataset_fn)
