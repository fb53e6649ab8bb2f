"""This machine's matrix-multiply peak through TensorFlow, float32 and bfloat16.

    python bench/matmul_peak.py

The best of a few square sizes (GFLOP/s), the yardstick for the achieved
FLOP/s of training that bench/run_all.py reports.
"""

from common import emit, timed


def peak(dtype, sizes=(1024, 2048, 4096), steps=5):
    import tensorflow as tf

    best = 0.0
    for n in sizes:
        a = tf.cast(tf.random.normal((n, n)), dtype)
        b = tf.cast(tf.random.normal((n, n)), dtype)
        matmul = tf.function(lambda a, b: tf.matmul(a, b))
        seconds = timed(lambda: matmul(a, b).numpy(), steps)
        best = max(best, 2 * n ** 3 / seconds / 1e9)
    return best


def main():
    import tensorflow as tf

    from albert_tf.training.devices import onednn_allows_bf16

    # Under a oneDNN ISA cap below bfloat16 (ONEDNN_MAX_CPU_ISA=AVX2) its product aborts.
    emit({"float32_gflops": round(peak(tf.float32), 1),
          "bfloat16_gflops": round(peak(tf.bfloat16), 1) if onednn_allows_bf16() else None})


if __name__ == "__main__":
    main()
