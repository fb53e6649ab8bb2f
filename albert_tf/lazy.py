"""Packages whose public names are imported on first use (PEP 562).

So that light tools (the config, the resource report, the tokenizer trainer,
the pretraining data writer) start without importing TensorFlow.
"""

import importlib


def lazy_exports(package, exports):
    """`(__getattr__, __dir__)` for `package`, exporting `exports` (name -> module)."""

    def __getattr__(name):
        if name in exports:
            return getattr(importlib.import_module(exports[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(exports)

    return __getattr__, __dir__
