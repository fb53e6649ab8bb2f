"""Reading a PyTorch `pytorch_model.bin` state dict without PyTorch, safely.

`torch.save` (zip format, PyTorch >= 1.6) writes a zip archive:
`<name>/data.pkl`, a pickle of the state dict whose tensors refer by key to
raw storages `<name>/data/<key>`, and `<name>/byteorder`. Unpickling runs
whatever globals a pickle names, so this reader allows only the handful a
state dict needs (`collections.OrderedDict`, `torch._utils._rebuild_tensor_v2`,
the storage types) and builds each tensor as a NumPy array from its storage
record; any other global is refused, naming it.

Legacy (pre-zip) pickles interleave storages with the pickle stream; they are
refused with what to do instead.
"""

import collections
import functools
import pickle
import zipfile

import numpy as np

from albert_tf.checkpoints.weights import CheckpointError

# torch storage type -> NumPy dtype (bfloat16 is read as uint16 and widened).
_STORAGE_DTYPES = {
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
    "BFloat16Storage": "bfloat16", "LongStorage": np.int64, "IntStorage": np.int32,
    "ShortStorage": np.int16, "CharStorage": np.int8, "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}


class _StorageType:
    """Stands for a `torch.<X>Storage` class in the pickle."""

    def __init__(self, name):
        self.name = name


class _Storage:
    """One storage record: its raw bytes read as a flat array."""

    def __init__(self, array):
        self.array = array


def _rebuild_tensor_v2(storage, offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None, max_elements=None):
    """NumPy's version of `torch._utils._rebuild_tensor_v2`: a strided view, copied,
    once its size, strides and offset are checked against its storage (and its
    element count against `max_elements`) before anything is allocated: a view
    with a stride of 0 over one element could claim gigabytes."""
    flat = storage.array
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride) or any(s < 0 for s in size + stride) or offset < 0:
        raise CheckpointError(f"a tensor has a negative or mismatched size, stride or offset: "
                              f"{size}, {stride}, {offset}")
    numel = int(np.prod(size, dtype=object)) if size else 1
    last = offset + sum((n - 1) * s for n, s in zip(size, stride)) if numel else offset - 1
    if last >= flat.size:
        raise CheckpointError(f"a tensor of size {size} (stride {stride}, offset {offset}) "
                              f"reaches past its storage of {flat.size} elements")
    if numel > flat.size - offset:
        raise CheckpointError(f"a tensor of size {size} (stride {stride}) has {numel} "
                              f"elements, more than its storage's {flat.size - offset} from "
                              f"offset {offset}: its elements overlap")
    if max_elements is not None and numel > max_elements:
        raise CheckpointError(f"a tensor of size {size} has {numel} elements, more than any "
                              f"tensor of the model's config ({max_elements})")
    view = np.lib.stride_tricks.as_strided(
        flat[offset:], shape=size, strides=[s * flat.itemsize for s in stride], writeable=False)
    return np.array(view)


_ALLOWED = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    **{("torch", name): _StorageType(name) for name in _STORAGE_DTYPES},
}


class _StateDictUnpickler(pickle.Unpickler):
    def __init__(self, file, archive, prefix, byteorder, source, max_elements=None):
        super().__init__(file)
        self.archive, self.prefix, self.byteorder, self.source = archive, prefix, byteorder, source
        self.max_elements = max_elements

    def find_class(self, module, name):
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return functools.partial(_rebuild_tensor_v2, max_elements=self.max_elements)
        if (module, name) not in _ALLOWED:
            raise CheckpointError(
                f"{self.source}: refusing to unpickle {module}.{name}: a state dict needs only "
                f"{sorted(f'{m}.{n}' for m, n in _ALLOWED)}; this file may run code when "
                "loaded (convert it to safetensors in a trusted environment)")
        return _ALLOWED[(module, name)]

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _StorageType)):
            raise CheckpointError(f"{self.source}: unexpected persistent id {pid!r:.100}")
        _, storage_type, key, _location, numel = pid
        try:
            raw = self.archive.read(f"{self.prefix}/data/{key}")
        except KeyError:
            raise CheckpointError(f"{self.source}: storage record data/{key} is missing") from None
        return _Storage(_as_array(raw, storage_type.name, numel, self.byteorder, self.source))


def _as_array(raw, storage_name, numel, byteorder, source):
    dtype = _STORAGE_DTYPES[storage_name]
    wide = dtype == "bfloat16"
    dtype = np.dtype(np.uint16 if wide else dtype).newbyteorder("<" if byteorder == "little"
                                                                else ">")
    if len(raw) < numel * dtype.itemsize:
        raise CheckpointError(f"{source}: a {storage_name} of {numel} elements has only "
                              f"{len(raw)} bytes")
    array = np.frombuffer(raw, dtype, count=numel)
    if wide:  # bfloat16 is the upper half of a float32
        array = (array.astype(np.uint32) << 16).view(np.float32)
    return array.astype(array.dtype.newbyteorder("="))


def read_state_dict(path, max_elements=None):
    """{name: np.ndarray} of a zip-format `torch.save`d state dict at `path`; a tensor
    over `max_elements` elements (the largest the model's config has) is refused
    before it is copied."""
    if not zipfile.is_zipfile(path):
        raise CheckpointError(
            f"{path}: a legacy (pre-zip) PyTorch pickle, which cannot be read safely without "
            "PyTorch. Install PyTorch and re-save it (torch.save(torch.load(p, "
            "weights_only=True), p)), or convert it to model.safetensors with transformers "
            "(AlbertForPreTraining.from_pretrained(folder).save_pretrained(out, "
            "safe_serialization=True))")
    with zipfile.ZipFile(path) as archive:
        pickles = [n for n in archive.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pickles) != 1:
            raise CheckpointError(f"{path}: expected one <name>/data.pkl in the archive, "
                                  f"found {pickles}")
        prefix = pickles[0][: -len("/data.pkl")]
        names = set(archive.namelist())
        byteorder = (archive.read(f"{prefix}/byteorder").decode().strip()
                     if f"{prefix}/byteorder" in names else "little")
        with archive.open(pickles[0]) as f:
            try:
                state = _StateDictUnpickler(f, archive, prefix, byteorder, path,
                                            max_elements).load()
            except CheckpointError as e:
                raise CheckpointError(str(e) if str(e).startswith(path) else
                                      f"{path}: {e}") from None
            except Exception as e:  # a malformed pickle: any error means "unreadable"
                raise CheckpointError(f"{path}: cannot read the state dict: "
                                      f"{type(e).__name__}: {e}") from None
    if not isinstance(state, dict) or not all(
            isinstance(k, str) and isinstance(v, np.ndarray) for k, v in state.items()):
        raise CheckpointError(f"{path}: does not hold a state dict (name -> tensor)")
    return dict(state)
