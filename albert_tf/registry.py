"""`Registry`: named plug-ins (task types, vocabulary types), their modules imported on first use.

A plain dict behind a `register` function: an entry registers itself when its
module is imported, and the registry imports its known modules before any
lookup, so that it is always complete while light tools start without them.
"""

import difflib
import importlib


class Registry:
    """Objects with a unique `name`, of one kind (the word errors use, e.g. "task").

    modules: the modules that register the built-in entries.
    """

    def __init__(self, kind, modules):
        self.kind = kind
        self.modules = tuple(modules)
        self._entries = {}

    def register(self, entry):
        """Adds `entry`; returns it (so `TASK = registry.register(Task())` reads naturally)."""
        if entry.name in self._entries:
            raise ValueError(f"{self.kind} {entry.name!r} is already registered")
        self._entries[entry.name] = entry
        return entry

    def unregister(self, name):
        """Removes the entry called `name` (for tests that register their own)."""
        del self._entries[name]

    def _load(self):
        for module in self.modules:
            importlib.import_module(module)

    def get(self, name):
        """The entry called `name`; an unknown name lists the known ones."""
        self._load()
        if name not in self._entries:
            close = difflib.get_close_matches(str(name).lower(), self.names(), n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(f"unknown {self.kind} {name!r}; {hint}known {self.kind}s: "
                             f"{', '.join(self.names())}")
        return self._entries[name]

    def names(self):
        self._load()
        return sorted(self._entries)

    def entries(self):
        """`{name: entry}` of every registered entry."""
        self._load()
        return dict(self._entries)
