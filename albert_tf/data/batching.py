"""Which examples go into which batch, planned on the host with numpy.

Planning batches ahead (rather than with a stateful shuffle buffer) makes a
run a pure function of its seed: step `s` always sees the same examples, so a
resumed run continues exactly where the killed one stopped, and every worker
of a distributed run agrees on the global batch without communicating.

Length-aware batching: examples are shuffled, cut into pools of
`pool_size` batches, sorted by length inside each pool and cut into batches,
whose order is shuffled again. Each batch is then padded only to its own
longest example, so short GLUE sentences are not padded to 512.
"""

import numpy as np

# With XLA every batch shape compiles once: (up to, step) of the lengths batches
# are padded to. Multiples of 16 to 128, of 32 to 256, of 64 beyond: a batch is
# padded by at most 1/8 to 1/4 of its length, and a run with max_seq_length 512
# compiles at most 16 shapes (8 with 128). On MRPC (bench/length_buckets.py)
# they keep 1.87x of length-aware batching's 1.99x fewer tokens than padding
# every batch to 128 (multiples of 32 alone: 1.67x).
XLA_LENGTH_STEPS = ((128, 16), (256, 32), (None, 64))


def bucket_lengths(max_length, steps=XLA_LENGTH_STEPS):
    """The lengths batches are padded to when each shape is compiled (XLA),
    `max_length` the last.

    >>> bucket_lengths(100), bucket_lengths(512)[6:]
    ([16, 32, 48, 64, 80, 96, 100], [112, 128, 160, 192, 224, 256, 320, 384, 448, 512])
    """
    lengths, length = {max_length}, 0
    for up_to, step in steps:
        while length + step < max_length and (up_to is None or length + step <= up_to):
            length += step
            lengths.add(length)
    return sorted(lengths)


def padded_length(lengths, max_length, multiple=8, buckets=None):
    """The length a batch of examples with `lengths` is padded to.

    Rounded up to `multiple` (tensor-core and oneDNN friendly); with
    `buckets` (a sorted list of lengths, e.g. for XLA, which compiles once per
    shape) rounded up to the next bucket instead.
    """
    longest = int(np.max(lengths)) if len(lengths) else 1
    if buckets:
        for b in buckets:
            if longest <= b:
                return min(b, max_length)
        return max_length
    return min(max_length, -(-longest // multiple) * multiple)


def _stream(num_examples, seed, needed):
    """Concatenated per-epoch permutations, at least `needed` long."""
    parts, epoch, total = [], 0, 0
    while total < needed:
        parts.append(np.random.default_rng([seed, epoch]).permutation(num_examples))
        total += num_examples
        epoch += 1
    return np.concatenate(parts)


def train_batches(lengths, batch_size, num_batches, seed, length_aware=True, pool_size=50):
    """`num_batches` arrays of `batch_size` example indices, deterministic in `seed`.

    Epochs follow each other without a gap; a batch may span two epochs, so
    even a data set smaller than one batch trains.
    """
    lengths = np.asarray(lengths)
    if len(lengths) == 0:
        raise ValueError("no training examples")
    order = _stream(len(lengths), seed, num_batches * batch_size)
    order = order[: num_batches * batch_size]
    if not length_aware:
        return list(order.reshape(num_batches, batch_size))
    rng = np.random.default_rng([seed, 1 << 20])
    batches = []
    pool = pool_size * batch_size
    for start in range(0, len(order), pool):
        chunk = order[start:start + pool]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        group = list(chunk.reshape(-1, batch_size))
        batches.extend(group[i] for i in rng.permutation(len(group)))
    return batches


def eval_batches(lengths, batch_size):
    """Batches covering every example once, longest first, the last one
    filled up with -1 (padding examples, dropped from the predictions)."""
    lengths = np.asarray(lengths)
    order = np.argsort(-lengths, kind="stable")
    padded = -(-len(order) // batch_size) * batch_size
    order = np.concatenate([order, np.full(padded - len(order), -1, order.dtype)])
    return list(order.reshape(-1, batch_size))
