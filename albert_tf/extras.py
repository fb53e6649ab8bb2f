"""Optional dependencies: the extras of the `albert-tf` package, and their one-line error.

`pip install albert-tf` installs what every command needs; a few commands need
more, installed as extras (`pip install "albert-tf[plots]"`). A command that
needs a missing extra says which, in one line, before it starts any long work.
The extras are declared in `pyproject.toml` (`[project.optional-dependencies]`);
`EXTRAS` names the module each provides (tests check the two agree).
"""

import importlib
import importlib.util

# extra -> (module imported, distribution on PyPI)
EXTRAS = {
    "plots": ("matplotlib", "matplotlib"),
    "metrics": ("nltk", "nltk"),
    "keras-hub": ("keras_hub", "keras-hub"),
    "search": ("optuna", "optuna"),
    "zh": ("jieba", "jieba"),
    "mlflow": ("mlflow", "mlflow"),
    # Runs phone exports (mediapipe/*.tflite) in MediaPipe's own text tasks.
    "mobile": ("mediapipe", "mediapipe"),
}


class MissingExtra(ImportError):
    """A command needs an optional dependency that is not installed."""


def available(extra):
    """Whether the module of `extra` can be imported (without importing it)."""
    module, _ = EXTRAS[extra]
    return importlib.util.find_spec(module) is not None


def require(extra, purpose):
    """Raises `MissingExtra` naming `extra` if its module is not installed.

    purpose: what needs it, e.g. "the confusion-matrix picture" (the message
    reads "<purpose> needs <distribution>: pip install "albert-tf[<extra>]"").
    """
    if not available(extra):
        _, distribution = EXTRAS[extra]
        raise MissingExtra(f"{purpose} needs {distribution}, which is not installed: "
                           f'pip install "albert-tf[{extra}]"')


def load(extra, purpose, module=None):
    """Imports and returns `module` (default: the extra's own) after `require`."""
    require(extra, purpose)
    return importlib.import_module(module or EXTRAS[extra][0])
