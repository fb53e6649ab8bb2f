"""`ServingModule`: what every task's serving module shares.

A `tf.Module` with two signatures, `serving_default` (raw text, defined by
the task's subclass) and `encoded` (token ids in, the model's raw outputs
out). Only TensorFlow and TensorFlow Text ops end up in the graph, so the
SavedModel loads where albert_tf and keras-hub are not installed.
"""

import functools
import types

import tensorflow as tf

TOKEN_INPUTS = ("token_ids", "segment_ids", "padding_mask")
# Batches are padded to a multiple of this many tokens, as `albert_tf.data.padded_length`
# pads them in training and evaluation.
LENGTH_MULTIPLE = 8


def token_specs(names, length=None):
    """int32 `(batch_size, length)` specs named `names` (length None: any)."""
    return [tf.TensorSpec([None, length], tf.int32, name=name) for name in names]


def padded_length(real_lengths, max_seq_length, minimum=1):
    """Where to cut a batch padded to `max_seq_length`: its longest row rounded up to a
    multiple of 8, at least `minimum` and at most `max_seq_length` (a scalar int32)."""
    longest = tf.reduce_max(tf.concat([[minimum], real_lengths], 0))
    rounded = (longest + LENGTH_MULTIPLE - 1) // LENGTH_MULTIPLE * LENGTH_MULTIPLE
    return tf.minimum(tf.maximum(rounded, minimum), max_seq_length)


class ServingModule(tf.Module):
    """A task model behind a raw-text signature and an `encoded` one.

    Subclasses set `input_names` (the model's token inputs, in order) and
    call `define_signatures` with their raw-text function.

    The Keras model is held outside the module's object graph: the SavedModel
    stores each variable once, as the signatures capture it (a tracked Keras
    model would add a second copy under its own path, and the TFLite
    converter does not find captured variables through that path: it
    produces a model without weights).
    """

    input_names = TOKEN_INPUTS

    def __init__(self, model, tokenizer, max_seq_length, name):
        super().__init__(name=name)
        self.tokenizer = tokenizer  # tracked: it owns the SentencePiece resource
        self.max_seq_length = max_seq_length
        self._predict = functools.partial(model, training=False)  # not tracked
        self._functions = types.MappingProxyType({})

    def define_signatures(self, serve, text_inputs):
        """Makes `serve` (string tensors named `text_inputs` -> outputs) the
        `serving_default` function, beside `encoded`.

        Both are traced without autograph (there is no Python control flow on
        tensors, and tracing the tokenizer's graph is most of an export's
        time), and held outside the object graph, in a mapping the module does
        not track: `tf.saved_model.save` would trace every tracked
        `tf.function` once more; the signatures are all that serving needs.
        """
        text_specs = [tf.TensorSpec([None], tf.string, name=name) for name in text_inputs]
        self._functions = types.MappingProxyType({
            "serving_default": tf.function(serve, input_signature=text_specs, autograph=False),
            "encoded": tf.function(self._encoded, input_signature=token_specs(self.input_names),
                                   autograph=False)})

    # Plain methods, not properties: saving looks for functions through dir().
    def serving_default(self, *args, **kwargs):
        """The raw-text function: string tensors (batch_size,), by position or
        by input name -> dict of outputs."""
        return self._functions["serving_default"](*args, **kwargs)

    def encoded(self, **inputs):
        """The token-ids function: int32 (batch_size, seq_length) tensors named
        as `input_names` -> the model's outputs."""
        return self._functions["encoded"](*(inputs[name] for name in self.input_names))

    def run_model(self, inputs):
        """The model's outputs (dict) on a dict of int32 token inputs, in inference mode."""
        return dict(self._predict(inputs))

    def _encoded(self, *tensors):
        return self.run_model(dict(zip(self.input_names, tensors)))

    def signatures(self):
        """`{name: concrete function}` for `tf.saved_model.save`; also records
        the variables they capture so that the SavedModel holds them."""
        functions = {name: function.get_concrete_function()
                     for name, function in self._functions.items()}
        seen, captured = set(), []
        for function in functions.values():
            for variable in function.variables:
                if id(variable) not in seen:
                    seen.add(id(variable))
                    captured.append(variable)
        self.captured_variables = captured
        return functions
