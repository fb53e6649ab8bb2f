"""Weight initialisation and activations shared by the layers."""

import keras


def kernel_initializer(stddev):
    """Truncated normal, as in the reference `create_initializer`."""
    return keras.initializers.TruncatedNormal(stddev=stddev)


def activation_fn(name):
    """The activation named in `AlbertConfig.activation`.

    `gelu_approximate` is the tanh form, 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))),
    which Google's ALBERT calls "gelu" and Hugging Face calls "gelu_new".
    """
    if name == "gelu_approximate":
        return lambda x: keras.activations.gelu(x, approximate=True)
    if name == "gelu":
        return lambda x: keras.activations.gelu(x, approximate=False)
    if name == "relu":
        return keras.activations.relu
    raise ValueError(f"unknown activation {name!r}")
