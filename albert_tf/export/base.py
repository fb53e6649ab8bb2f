"""`ServingModule`: what every task's serving module shares.

A `tf.Module` with two signatures, `serving_default` (raw text, defined by
the task's subclass) and `encoded` (token ids in, the model's raw outputs
out). Only TensorFlow and TensorFlow Text ops end up in the graph, so the
SavedModel loads where albert_tf and keras-hub are not installed.
"""

import functools
import inspect
import pathlib
import types

import tensorflow as tf

from albert_tf.layers.fused import plain_ops
from albert_tf.steps import text_limit

TOKEN_INPUTS = ("token_ids", "segment_ids", "padding_mask")
# The browser's decoders of the built-in serving modules (`ServingModule.web_decoder`).
WEB_ASSETS = pathlib.Path(__file__).parent / "formats" / "web" / "assets"
# Model inputs are run this many tokens at a time (`ServingModule.run_model_in_chunks`).
CHUNK_TOKENS = 4096


def token_specs(names, length=None):
    """int32 `(batch_size, length)` specs named `names` (length None: any)."""
    return [tf.TensorSpec([None, length], tf.int32, name=name) for name in names]


def checked_inputs(named, ranks=None):
    """The string inputs `named` (name -> tensor), once checked at run time to be
    one batch: each a dense tensor of its rank in `ranks` (default 1), all of one
    first dimension. Else an `InvalidArgumentError` names the inputs and gives
    their shapes (the static shape of a signature's input is not checked by
    its callers: TF Serving passes a `[1, 2]` or `[2, 1]` tensor to a `[batch]`
    input).
    """
    names, values = list(named), list(named.values())
    ranks = ranks or [1] * len(values)
    firsts, ok = [], tf.constant(True)
    for value, rank in zip(values, ranks):
        # The shape, then -1: the -1's index is the rank and its first entry the first
        # dimension (-1 for a scalar). Both are read from the values of the runtime
        # shape: tf.rank, tf.size of the shape and the like are folded to the
        # signature's static rank when the graph is built or optimized.
        shape = tf.concat([tf.shape(value, out_type=tf.int32), [-1]], 0)
        ok &= tf.equal(tf.argmin(shape, output_type=tf.int32), rank)
        firsts.append(shape[0])
    for first in firsts[1:]:
        ok &= tf.equal(first, firsts[0])
    expected = ", ".join(f"{n} [batch{', num_choices' if r == 2 else ''}]"
                         for n, r in zip(names, ranks))
    check = tf.debugging.Assert(ok, [f"inputs must be one batch: {expected}; got shapes"]
                                + [x for n, v in named.items() for x in (f"{n}", tf.shape(v))],
                                summarize=8)
    with tf.control_dependencies([check]):
        return [tf.identity(v) for v in values]


def input_limits(model):
    """`{input name: number of values it may take}` of the model's embedding
    (token ids below the vocabulary size, segments below the number of segments,
    a padding mask of 0 and 1); {} for a model without an `AlbertEmbedding`."""
    layers = model._flatten_layers(include_self=True, recursive=True)
    for layer in layers:
        if hasattr(layer, "vocabulary_size") and hasattr(layer, "num_segments"):
            return {"token_ids": layer.vocabulary_size, "segment_ids": layer.num_segments,
                    "padding_mask": 2}
    return {}


def checked_tokens(inputs, limits):
    """`inputs` (name -> int32 tensor), once checked to hold values in `[0, limit)`
    for each name in `limits`: an embedding lookup reads a negative id as one
    counted from the end of its table, so -5 would be answered as another token.
    Else an `InvalidArgumentError` names the input and its range."""
    checks = [tf.debugging.Assert(tf.reduce_all((value >= 0) & (value < limits[name])),
                                  [f"{name} must hold values in [0, {limits[name]})"])
              for name, value in inputs.items() if name in limits]
    with tf.control_dependencies(checks):
        return {name: tf.identity(value) for name, value in inputs.items()}


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
    # The JavaScript module that answers as `serving_default` does in the browser,
    # around the `encoded` model (the web export's decoder.js: it exports
    # `answer(model, values)`, see web_assets/text.js), or None: no web export.
    web_decoder = None

    def __init__(self, model, tokenizer, max_seq_length, name):
        super().__init__(name=name)
        self.tokenizer = tokenizer  # tracked: it owns the SentencePiece resource
        self.max_seq_length = max_seq_length
        # The tokens of a text read at most by an export that reads it in windows.
        self.windowed_tokens = text_limit.WINDOWED_LENGTHS * max_seq_length
        self._predict = functools.partial(model, training=False)  # not tracked
        self._limits = input_limits(model)
        self._functions = types.MappingProxyType({})

    def define_signatures(self, serve, text_inputs, ranks=None):
        """Makes `serve` (string tensors named `text_inputs` -> outputs) the
        `serving_default` function, beside `encoded`. `ranks`: each input's
        rank (default 1: `(batch_size,)`; 2 for a list of strings a row,
        `(batch_size, num_items)`, "" for no item).

        Both are traced without autograph (there is no Python control flow on
        tensors, and tracing the tokenizer's graph is most of an export's
        time), and held outside the object graph, in a mapping the module does
        not track: `tf.saved_model.save` would trace every tracked
        `tf.function` once more; the signatures are all that serving needs.
        """
        ranks = list(ranks or [1] * len(text_inputs))
        text_specs = [tf.TensorSpec([None] * rank, tf.string, name=name)
                      for name, rank in zip(text_inputs, ranks)]

        def checked(*texts):
            return serve(*checked_inputs(dict(zip(text_inputs, texts)), ranks))

        checked.__signature__ = inspect.signature(serve)  # the inputs' names

        self._functions = types.MappingProxyType({
            "serving_default": tf.function(checked, input_signature=text_specs, autograph=False),
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
        """The model's outputs (dict) on a dict of int32 token inputs, in inference
        mode, traced with standard TensorFlow ops only (no XLA-compiled kernel,
        `albert_tf.layers.fused.plain_ops`): TF Serving, the TFLite converter and
        the web bundle run the graph."""
        with plain_ops():
            return dict(self._predict(inputs))

    def run_model_in_chunks(self, inputs):
        """`run_model` over the rows of `inputs` a chunk at a time, so that a request
        of many windows holds the activations of one chunk at once, not of all
        (`CHUNK_TOKENS` tokens a chunk); the outputs are those of one call."""
        chunk = max(1, CHUNK_TOKENS // self.max_seq_length)
        rows = tf.shape(next(iter(inputs.values())))[0]
        count = tf.maximum(1, (rows + chunk - 1) // chunk)
        # Padding rows (all-zero ids and mask) are computed and dropped.
        padded = {k: tf.pad(v, [[0, count * chunk - rows], [0, 0]]) for k, v in inputs.items()}
        first = self.run_model({k: v[:chunk] for k, v in padded.items()})
        arrays = {k: tf.TensorArray(v.dtype, size=count, infer_shape=False).write(0, v)
                  for k, v in first.items()}

        def body(i, arrays):
            out = self.run_model({k: v[i * chunk:(i + 1) * chunk] for k, v in padded.items()})
            return i + 1, {k: arrays[k].write(i, out[k]) for k in arrays}

        _, arrays = tf.while_loop(lambda i, _: i < count, body, (1, arrays),
                                  parallel_iterations=1)
        return {k: a.concat()[:rows] for k, a in arrays.items()}

    def text_windows(self):
        """JSON-able, for a server to count a request's sequences before running it
        (`albert_tf.serving.model.row_costs`): None when each row is one sequence;
        for an export that reads long texts in windows, the raw-text `inputs`
        windowed, each window's `room` for their tokens and the `step` between
        windows at their smallest, and the tokens of a row read at most
        (`max_tokens`)."""
        return None

    def decoding_settings(self):
        """JSON-able: what a client running `encoded` (TFLite) needs to answer as
        `serving_default` does: `kind`, the raw-text `inputs`, the task's labels
        and decoding parameters. Subclasses that have no such client raise."""
        raise ValueError(f"exports of {type(self).__name__} have no decoding settings for "
                         "a client of the encoded signature")

    def _encoded(self, *tensors):
        return self.run_model(checked_tokens(dict(zip(self.input_names, tensors)),
                                             self._limits))

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
