"""TensorFlow started without its start-up noise, for every program and notebook.

TensorFlow's native code prints lines on every start (and on a model's first
run) before any log setting applies; on a machine without a GPU the CUDA ones
read like failures. `load_tensorflow` imports it with those lines filtered
out (`native_noise_filtered`), which the training callbacks also wrap around
a model's first step.
"""

import contextlib
import importlib
import os
import sys
import tempfile

# Lines TensorFlow's native code prints on every start (and on a model's first
# run), before any log setting applies; on a machine without a GPU the CUDA
# ones read like failures, and the oneDNN ones are notes, not problems.
STARTUP_NOISE = ("All log messages before absl::InitializeLog()", "cudart_stub.cc",
                 "cuda_platform.cc", "cpu_feature_guard.cc",
                 "This TensorFlow binary is optimized", "To enable the following instructions",
                 "Unable to register cu", "computation placer already registered",
                 "oneDNN custom operations are on",
                 # "oneDNN supports DT_INT32 (DT_INT64, ...) only on platforms with AVX-512":
                 "only on platforms with AVX-512. Falling back to the default Eigen",
                 # Notes of a first run where TF_CPP_MIN_LOG_LEVEL came too late.
                 "XLA service 0x", "StreamExecutor [", "disabling MLIR crash reproducer",
                 "Compiled cluster using XLA", "Memory patch applied",
                 "does not implement the AsGraphDefInternal()")


@contextlib.contextmanager
def native_noise_filtered():
    """Inside: what native code writes to file descriptor 2 is caught (in a
    temporary file) and, at the end, passed on without `STARTUP_NOISE` lines."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            # (a notebook's stream takes text only)
            write = getattr(sys.stderr, "buffer", None)
            write = write.write if write is not None else \
                (lambda line: sys.stderr.write(line.decode("utf-8", "replace")))
            for line in captured:
                if not any(noise.encode() in line for noise in STARTUP_NOISE):
                    write(line)
            sys.stderr.flush()


def load_tensorflow(*modules):
    """Imports TensorFlow (and `modules`, e.g. "tensorflow_text") and starts its
    runtime with its start-up lines filtered out (`native_noise_filtered`).

    A worker of a multi-worker run (TF_CONFIG set) only imports it: collective
    ops must be configured before the runtime starts. Returns the `tensorflow`
    module.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    missing = [m for m in ("tensorflow", *modules) if m not in sys.modules]
    if not missing:
        return sys.modules["tensorflow"]
    with native_noise_filtered():
        import tensorflow as tf

        for name in modules:
            importlib.import_module(name)
        if "TF_CONFIG" not in os.environ:
            tf.config.list_logical_devices()  # starts the runtime (and CUDA's probe)
    return tf


def filter_process_noise():
    """For the rest of the process (a command run from the command line): what
    is written to file descriptor 2, by Python or by native code at any time (a
    kernel's first run prints oneDNN's notes mid-run), passes through a thread
    that leaves out `STARTUP_NOISE` lines. At exit the thread passes on what is
    left. Returns False where it could not (no file descriptor 2)."""
    import atexit
    import threading

    try:
        sys.stderr.flush()
        target = os.dup(2)
    except OSError:
        return False
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)

    def forward():
        with os.fdopen(read_end, "rb") as lines:
            for line in lines:
                if not any(noise.encode() in line for noise in STARTUP_NOISE):
                    os.write(target, line)

    thread = threading.Thread(target=forward, name="stderr-filter", daemon=True)
    thread.start()

    def finish():
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os.dup2(target, 2)  # the pipe's last writer closed: the thread reads to its end
        thread.join(timeout=5)

    atexit.register(finish)
    return True