"""Training and forward throughput of albert-base (random weights), one setting per process.

    python bench/train_speed.py --impl=albert_tf [--batch=8] [--seq=128] [--steps=10]
        [--size=base|small] [--precision=auto] [--xla=auto] [--layer_execution=auto]

impl: albert_tf (its default settings: what `finetune` picks on this
device), albert_tf_fp32, keras_hub (AlbertTextClassifier, its defaults),
keras_hub_xla (float32, XLA), keras_hub_bf16 (mixed_bfloat16, no XLA), keras_hub_bf16_xla,
torch_fp32 / torch_bf16 (transformers AlbertForSequenceClassification,
bf16 by CPU autocast). Prints one JSON line: examples/s for a training step
and for a forward pass. --size=small is a narrower model (hidden 384, 12
layers) for quicker comparisons; --precision, --xla and --layer_execution
are albert_tf's settings of the same names (auto: what a run would choose).
Beside the examples/s by the clock, `train_per_cpu_s` and `forward_per_cpu_s`
divide by this process's CPU time instead (on a shared machine, what its
neighbours' load disturbs less).
"""

import argparse

from albert_tf.training.settings import LAYER_EXECUTIONS, PRECISIONS, XLA_CHOICES
from common import SIZES, emit, keras_hub_albert_base_classifier, timed


def _data(batch, seq):
    import numpy as np

    rng = np.random.default_rng(0)
    return (rng.integers(5, 30000, (batch, seq)).astype("int32"),
            rng.integers(0, 2, batch).astype("int32"))


def _rates(batch, steps, train, forward):
    """Examples/s of `train()` and `forward()` (one batch each call), by the
    clock and by this process's CPU time (examples per CPU second: what a
    shared machine's load disturbs less)."""
    cpu = []
    rates = {"train": batch / timed(train, steps, cpu=cpu),
             "forward": batch / timed(forward, steps, cpu=cpu)}
    return {**rates, "train_per_cpu_s": batch / cpu[0], "forward_per_cpu_s": batch / cpu[1]}


def albert_tf(batch, seq, steps, size="base", precision="auto", xla="auto",
              layer_execution="auto"):
    import tensorflow as tf

    from albert_tf.backbone import AlbertBackbone
    from albert_tf.config import AlbertConfig
    from albert_tf.models import AlbertClassifier
    from albert_tf.training.devices import make_strategy
    from albert_tf.training.execution import resolve_execution
    from albert_tf.training.optimizers import create_optimizer

    strategy = make_strategy("auto")
    config = AlbertConfig(**SIZES[size])
    execution = resolve_execution(precision, xla, layer_execution, strategy, config=config,
                                  batch_size=batch, seq_length=seq)
    policy, jit = execution.policy, execution.jit
    with strategy.scope():
        model = AlbertClassifier(AlbertBackbone(config, dtype=policy, unroll=execution.unroll), 2)
        model.compile(optimizer=create_optimizer("adamw", 1e-5, 10_000, 100), jit_compile=jit)
    tokens, labels = _data(batch, seq)
    x = {"token_ids": tokens, "segment_ids": 0 * tokens, "padding_mask": 1 + 0 * tokens}
    dataset = tf.data.Dataset.from_tensors((x, {"label": labels})).repeat()
    iterator = iter(dataset)
    model.make_train_function()
    train = lambda: model.train_function(iterator)  # noqa: E731
    # Compiled as a run's evaluation and prediction are (`--xla=auto` measures
    # their XLA apart from the training step's).
    forward = tf.function(lambda x: model(x, training=False)["logits"],
                          jit_compile=execution.inference_jit)
    return {"policy": policy, "xla": jit, "forward_xla": execution.inference_jit,
            "layers": execution.layer_execution,
            "chose_in_s": round(execution.seconds, 1), "probe": execution.measurements(),
            **_rates(batch, steps, lambda: float(train()["loss"].numpy().ravel()[0]),
                     lambda: forward(x).numpy())}


def keras_hub(batch, seq, steps, size="base", policy=None, jit="auto"):
    import keras
    import tensorflow as tf

    if policy:
        keras.mixed_precision.set_global_policy(policy)
    model = keras_hub_albert_base_classifier(size=size)
    model.compile(jit_compile=jit)  # keras-hub's own optimizer, loss and metrics
    tokens, labels = _data(batch, seq)
    x = {"token_ids": tokens, "segment_ids": 0 * tokens, "padding_mask": 1 + 0 * tokens}
    iterator = iter(tf.data.Dataset.from_tensors((x, labels)).repeat())
    model.make_train_function()
    forward = tf.function(lambda x: model(x, training=False), jit_compile=jit is True)
    return {"policy": keras.mixed_precision.global_policy().name,
            "xla": bool(model.jit_compile),
            **_rates(batch, steps, lambda: float(model.train_function(iterator)["loss"]),
                     lambda: forward(x).numpy())}


def torch_hf(batch, seq, steps, size="base", bf16=False):
    import contextlib

    import torch
    from transformers import AlbertConfig, AlbertForSequenceClassification

    dims = SIZES[size]
    config = AlbertConfig(vocab_size=dims["vocabulary_size"], embedding_size=dims["embedding_dim"],
                          hidden_size=dims["hidden_dim"], num_hidden_layers=dims["num_layers"],
                          num_attention_heads=dims["num_heads"],
                          intermediate_size=dims["intermediate_dim"],
                          hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                          classifier_dropout_prob=0.1, num_labels=2)
    model = AlbertForSequenceClassification(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    tokens, labels = (torch.from_numpy(a).long() for a in _data(batch, seq))
    autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if bf16 else \
        contextlib.nullcontext

    def train():
        model.train()
        with autocast():
            loss = model(input_ids=tokens, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

    def forward():
        model.eval()
        with torch.no_grad(), autocast():
            model(input_ids=tokens).logits.float().numpy()

    return {"policy": "bf16 autocast" if bf16 else "float32", "xla": False,
            "threads": torch.get_num_threads(), **_rates(batch, steps, train, forward)}


IMPLS = {
    "albert_tf": albert_tf,
    "albert_tf_fp32": lambda *a, precision="auto", **k: albert_tf(*a, precision="fp32", **k),
    "keras_hub": keras_hub,
    "keras_hub_xla": lambda *a: keras_hub(*a, "float32", True),
    "keras_hub_bf16": lambda *a: keras_hub(*a, "mixed_bfloat16", False),
    "keras_hub_bf16_xla": lambda *a: keras_hub(*a, "mixed_bfloat16", True),
    "torch_fp32": torch_hf,
    "torch_bf16": lambda *a: torch_hf(*a, bf16=True),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", choices=sorted(IMPLS), required=True)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--size", choices=sorted(SIZES), default="base")
    parser.add_argument("--precision", default="auto", choices=PRECISIONS, help="albert_tf's")
    parser.add_argument("--xla", default="auto", choices=XLA_CHOICES, help="albert_tf's")
    parser.add_argument("--layer_execution", default="auto", choices=LAYER_EXECUTIONS,
                        help="albert_tf's")
    parser.add_argument("--label", help="the row's name (default: --impl)")
    args = parser.parse_args()
    extra = dict(precision=args.precision, xla=args.xla,
                 layer_execution=args.layer_execution) if args.impl.startswith("albert_tf") else {}
    emit({"impl": args.label or args.impl,
          **IMPLS[args.impl](args.batch, args.seq, args.steps, args.size, **extra)})


if __name__ == "__main__":
    main()
