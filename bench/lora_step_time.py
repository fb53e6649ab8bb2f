"""LoRA against full fine-tuning: trainable parameters, saved size and training-step time.

    python bench/lora_step_time.py [--model=base|tiny] [--rank=8] [--batch=8] [--seq=128]
                                   [--rounds=5] [--steps=3]

Both classifiers (random weights, the same config) live in one process and
their steps are interleaved (`--steps` of one, then of the other, `--rounds`
times), so that the ratio is measured side by side on a shared machine.
Prints one JSON line.
"""

import argparse
import statistics
import time

from common import emit

CONFIGS = {
    "base": dict(vocabulary_size=30000, num_layers=12, num_heads=12, hidden_dim=768,
                 intermediate_dim=3072, embedding_dim=128, max_sequence_length=512),
    "tiny": dict(vocabulary_size=30000, num_layers=4, num_heads=4, hidden_dim=128,
                 intermediate_dim=256, embedding_dim=64, max_sequence_length=512),
}


def _trainer(config, rank, x, y):
    import keras
    import tensorflow as tf

    from albert_tf import lora
    from albert_tf.backbone import AlbertBackbone
    from albert_tf.models import AlbertClassifier
    from albert_tf.training.optimizers import create_optimizer

    model = AlbertClassifier(AlbertBackbone(config), 2)
    if rank:
        lora.enable_lora(model.backbone, rank)
    model.compile(optimizer=create_optimizer("adamw", 1e-5, 10_000, 100), jit_compile=False)
    iterator = iter(tf.data.Dataset.from_tensors((x, y)).repeat())
    model.make_train_function()
    keras.utils.set_random_seed(0)
    return model, lambda: float(model.train_function(iterator)["loss"].numpy().ravel()[0])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="tiny", choices=sorted(CONFIGS))
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()

    import numpy as np

    from albert_tf import lora
    from albert_tf.config import AlbertConfig

    config = AlbertConfig(**CONFIGS[args.model])
    tokens = np.random.default_rng(0).integers(5, 30000, (args.batch, args.seq)).astype("int32")
    x = {"token_ids": tokens, "segment_ids": 0 * tokens, "padding_mask": 1 + 0 * tokens}
    y = {"label": np.arange(args.batch, dtype="int32") % 2}
    trainers = {"full": _trainer(config, 0, x, y), "lora": _trainer(config, args.rank, x, y)}
    times = {name: [] for name in trainers}
    for _, step in trainers.values():
        step(), step()  # trace and warm up
    for _ in range(args.rounds):
        for name, (_, step) in trainers.items():
            start = time.perf_counter()
            for _ in range(args.steps):
                step()
            times[name].append((time.perf_counter() - start) / args.steps)
    seconds = {name: statistics.median(t) for name, t in times.items()}
    model = trainers["lora"][0]
    count = lambda vs: sum(int(np.prod(v.shape)) for v in vs)  # noqa: E731
    emit({"model": args.model, "rank": args.rank, "batch": args.batch, "seq": args.seq,
          "step_seconds": seconds, "lora_over_full": seconds["lora"] / seconds["full"],
          "trainable": {"full": count(trainers["full"][0].trainable_variables),
                        "lora": count(model.trainable_variables)},
          "adapter_parameters": lora.adapter_parameters(config, args.rank),
          "saved_mb": {"full": count(model.weights) * 4 / 1e6 - count(
              [v for v in model.weights if lora.is_adapter(v.path)]) * 4 / 1e6,
                       "lora": count(model.trainable_variables) * 4 / 1e6},
          "report": lora.size_report(model, args.rank)})


if __name__ == "__main__":
    main()
