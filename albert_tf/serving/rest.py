"""TF Serving's REST predict format: request bodies to arrays, outputs to answers.

    {"signature_name": "serving_default", "instances": [{"text_a": ..., "text_b": ...}]}
      -> {"predictions": [{"label": ..., "probabilities": [...]}, ...]}
    {"inputs": {"text_a": [...], "text_b": [...]}}  -> {"outputs": {"label": [...], ...}}

as TF Serving's `json_tensor` reads and writes them: a signature of one input
may take bare values (`"instances": ["a", "b"]`, `"inputs": [...]`), an
answer of one output is that output's values alone, a binary string is
`{"b64": "..."}`. Every mistake raises `BadRequest`, one line naming the
input and what the signature takes.
"""

import base64
import binascii

import numpy as np

DEFAULT_SIGNATURE = "serving_default"
ROW, COLUMNAR = "instances", "inputs"


class BadRequest(ValueError):
    """The request does not fit the signature (the server answers 400)."""


class Request:
    """A parsed predict request: `signature_name`, `form` (ROW or COLUMNAR),
    `arrays` ({input: numpy array}) and `rows` (the batch size)."""

    def __init__(self, signature_name, form, arrays, rows):
        self.signature_name, self.form, self.arrays, self.rows = signature_name, form, arrays, rows


def parse(body, signatures):
    """A `Request` from a decoded JSON body; `signatures`: name -> `versions.Signature`."""
    if not isinstance(body, dict):
        raise BadRequest(f"the body must be a JSON object with \"instances\" or \"inputs\", "
                         f"got {type(body).__name__}")
    name = body.get("signature_name", DEFAULT_SIGNATURE)
    if not isinstance(name, str):
        raise BadRequest(f"\"signature_name\" must be a string, got {type(name).__name__}")
    if name not in signatures:
        raise BadRequest(f"no signature {name!r}; the model has {', '.join(sorted(signatures))}")
    signature = signatures[name]
    forms = [k for k in (ROW, COLUMNAR) if k in body]
    if len(forms) != 1:
        raise BadRequest("the body must have exactly one of \"instances\" (row format) and "
                         "\"inputs\" (columnar format)")
    unknown = sorted(set(body) - {"signature_name", forms[0]})
    if unknown:
        raise BadRequest(f"unknown key(s) {', '.join(map(repr, unknown))} in the body")
    columns = (_row_columns if forms[0] == ROW else _named_columns)(
        body[forms[0]], signature.inputs, getattr(signature, "columns", {}))
    arrays = {n: _array(n, columns[n], *signature.inputs[n]) for n in signature.inputs}
    return Request(name, forms[0], arrays, _batch_size(arrays))


def _takes(inputs, columns=None):
    trained = [f"{n} as {c!r}" for n, c in sorted((columns or {}).items()) if n in inputs]
    return (f"the signature takes {', '.join(sorted(inputs))}"
            + (f" (or the columns it was trained on: {', '.join(trained)})" if trained else ""))


def _is_value(instance):
    """Whether a JSON value is one input's value rather than an object of inputs:
    anything but an object, or TF Serving's binary string `{"b64": ...}`."""
    return not isinstance(instance, dict) or set(instance) == {"b64"}


def _renamed(given, columns):
    """`given` with a trained column's name (`columns`: input -> column) replaced
    by its input's, where the input itself is not given."""
    inputs_of = {c: n for n, c in columns.items() if n not in given}
    return {inputs_of.get(k, k): v for k, v in given.items()}


def _row_columns(instances, inputs, columns=None):
    if not isinstance(instances, list):
        raise BadRequest(f"\"instances\" must be a list, got {type(instances).__name__}")
    if not instances:
        raise BadRequest("\"instances\" is empty")
    (only,) = inputs if len(inputs) == 1 else (None,)
    found = {n: [] for n in inputs}
    for i, instance in enumerate(instances):
        if only is not None and _is_value(instance):
            instance = {only: instance}
        if not isinstance(instance, dict):
            raise BadRequest(f"instances[{i}] must be an object of the inputs; "
                             f"{_takes(inputs, columns)}")
        instance = _renamed(instance, columns or {})
        _check_names(instance, inputs, f"instances[{i}]", columns)
        for n in inputs:
            found[n].append(instance[n])
    return found


def _named_columns(values, inputs, columns=None):
    if len(inputs) == 1 and (not isinstance(values, dict) or _is_value(values)):
        values = {next(iter(inputs)): values}
    if not isinstance(values, dict):
        raise BadRequest(f"\"inputs\" must be an object of the inputs; "
                         f"{_takes(inputs, columns)}")
    values = _renamed(values, columns or {})
    _check_names(values, inputs, "\"inputs\"", columns)
    return values


def _check_names(given, inputs, where, columns=None):
    missing, unknown = sorted(set(inputs) - set(given)), sorted(set(given) - set(inputs))
    if missing or unknown:
        what = [f"unknown {', '.join(map(repr, unknown))}"] if unknown else []
        what += [f"missing {', '.join(map(repr, missing))}"] if missing else []
        raise BadRequest(f"{where}: {'; '.join(what)}; {_takes(inputs, columns)}")


def _array(name, value, dtype, shape):
    """`value` (nested lists) as an array of the input's dtype, its shape checked."""
    found = _shape(value, name)
    if shape is not None and (len(found) != len(shape) or any(
            want is not None and want != got for want, got in zip(shape, found))):
        want = "[" + ", ".join("-1" if d is None else str(d) for d in shape) + "]"
        raise BadRequest(f"input {name!r} has shape {list(found)}; the signature takes {want}")
    leaves = list(_leaves(value))
    try:
        if dtype.is_floating or dtype.is_integer or dtype.is_bool:
            if any(isinstance(v, (str, dict)) or v is None for v in leaves):
                raise TypeError("a string or null")
            array = np.array(leaves, dtype=dtype.as_numpy_dtype)
            if dtype.is_integer and not np.array_equal(array, np.array(leaves, dtype=object)):
                raise TypeError("a number out of range or not an integer")
        elif dtype.name == "string":
            array = np.array([_string(v) for v in leaves], dtype=object)
        else:
            raise TypeError(f"an input of dtype {dtype.name}, which JSON cannot carry")
    except (TypeError, ValueError, OverflowError) as e:
        raise BadRequest(f"input {name!r} must hold {dtype.name} values: {e}") from None
    return array.reshape(found)


def _shape(value, name):
    """The shape of rectangular nested lists; a `{"b64": ...}` object is one value."""
    if not isinstance(value, list):
        return ()
    inner = {_shape(v, name) for v in value}
    if len(inner) > 1:
        raise BadRequest(f"input {name!r} is ragged: its lists differ in length or depth")
    return (len(value), *(inner.pop() if inner else ()))


def _leaves(value):
    if isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def _string(value):
    if isinstance(value, str):
        return value.encode("utf-8", "replace")
    if isinstance(value, dict) and set(value) == {"b64"} and isinstance(value["b64"], str):
        try:
            return base64.b64decode(value["b64"], validate=True)
        except binascii.Error as e:
            raise ValueError(f"bad base64 ({e})") from None
    raise TypeError(f"got {type(value).__name__} {str(value)[:40]!r}, not a string")


def _batch_size(arrays):
    sizes = {n: (a.shape[0] if a.ndim else None) for n, a in arrays.items()}
    if None in sizes.values() or len(set(sizes.values())) > 1:
        def rows(size):
            return "a scalar" if size is None else f"{size} row{'s' * (size != 1)}"

        listed = ", ".join(f"{n} {rows(s)}" for n, s in sorted(sizes.items()))
        raise BadRequest(f"the inputs must have one batch size (their first dimension): {listed}")
    return next(iter(sizes.values()))


def answer(form, parts):
    """The response body: the outputs of a request's parts (each name -> numpy
    array, batch first, in the request's row order) as TF Serving writes them
    for a request of `form`. A part's arrays are padded to its own longest row
    (the exports' padding), so the rows of parts are joined as JSON lists."""
    values = {n: [row for part in parts for row in _json(part[n])]
              for n in sorted(parts[0])}
    if form == COLUMNAR:
        return {"outputs": next(iter(values.values())) if len(values) == 1 else values}
    rows = len(next(iter(values.values())))
    if len(values) == 1:
        return {"predictions": next(iter(values.values()))}
    return {"predictions": [{n: v[i] for n, v in values.items()} for i in range(rows)]}


def _json(array):
    if array.dtype == object or array.dtype.kind == "S":
        return _decoded(array.tolist())
    return array.tolist()


def _decoded(value):
    if isinstance(value, list):
        return [_decoded(v) for v in value]
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
