"""A preprocessing layer run over a split's ids into its feature arrays.

Training-time featurization runs the same Keras layers as the exported
serving graph (as keras-hub's preprocessors serve both): the split's ids,
ragged `(N, None)`, are cut into batches, the layer runs eagerly on each
batch, and the outputs land in arrays allocated with `new_array`
(memory-mapped `.npy` files while the feature cache is built).

Not a `tf.data` pipeline, nor a `tf.function`: on 11,004 MRPC pairs (128
tokens, a shared 2-core machine) a pipeline over the batches cost 1.6 s of
building and running its graph against 0.07 s for the batches themselves in
this loop; and a traced function cost 0.43-0.55 s of tracing for 300 pairs
against 0.02-0.05 s eagerly, and 1.56-1.68 s of CPU against 1.31-1.33 s
eagerly for 88,000 pairs (the layer's few ops each run on 4,096 rows at once).
"""

import itertools

import numpy as np
import tensorflow as tf

from albert_tf.data.features import new_array

# Rows per call of the layer: large enough that the per-call overhead of a
# few TensorFlow ops is small against the rows' work, small enough to bound memory.
BATCH_ROWS = 4096


def ragged_rows(rows):
    """Lists of ints as a ragged int32 `(len(rows), None)` tensor (one host copy)."""
    lengths = np.fromiter(map(len, rows), np.int64, len(rows))
    # chain.from_iterable: half the CPU time of a nested generator (20,000 rows).
    flat = np.fromiter(itertools.chain.from_iterable(rows), np.int32, int(lengths.sum()))
    return tf.RaggedTensor.from_row_lengths(flat, lengths, validate=False)


def map_rows(layer, inputs, names, batch_rows=BATCH_ROWS):
    """`layer(*batch)` on every batch of `inputs`, as host arrays of one row per input row.

    Args:
        layer: a callable of tensors `(b, ...)`, ragged or dense, that returns
            a dict of tensors of `b` rows each (e.g. `SegmentPacker`).
        inputs: a tuple of tensors (ragged or dense) of `N` rows each.
        names: the outputs to keep.
        batch_rows: rows per call.

    Returns:
        dict `name -> numpy array (N, ...)` of the layer's dtype.
    """
    total = int(inputs[0].nrows() if isinstance(inputs[0], tf.RaggedTensor)
                else tf.shape(inputs[0])[0])
    out = None
    for begin in range(0, max(total, 1), batch_rows):
        batch = layer(*(x[begin:begin + batch_rows] for x in inputs))
        if out is None:
            out = {n: new_array((total, *batch[n].shape[1:]), batch[n].dtype.as_numpy_dtype)
                   for n in names}
        for n in names:
            out[n][begin:begin + batch_rows] = batch[n].numpy()
    return out
