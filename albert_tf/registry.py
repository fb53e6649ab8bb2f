"""`Registry`: named plug-ins (task types, vocabulary types), their modules imported on first use.

A plain dict behind a `register` function: an entry registers itself when its
module is imported, and the registry imports its known modules before any
lookup, so that it is always complete while light tools start without them.
Entries may also be declared by name with their module (`declared`, or a
function that finds them): then `names()` lists them without importing
anything, and a lookup imports only the module of the entry looked up.
"""

import difflib
import importlib


class Registry:
    """Objects with a unique `name`, of one kind (the word errors use, e.g. "task").

    modules: the modules that register the built-in entries, all imported
        before any lookup (or a function returning them, called then).
    declared: `{name: module}` of built-in entries known by name, each module
        imported when one of its entries is looked up (or all are listed by
        `entries`); or a function returning that dict, called when needed.
    """

    def __init__(self, kind, modules=(), declared=None):
        self.kind = kind
        self._modules = modules if callable(modules) else tuple(modules)
        self._declared = declared if callable(declared) else dict(declared or {})
        self._entries = {}

    @property
    def declared(self):
        return self._declared() if callable(self._declared) else self._declared

    def register(self, entry):
        """Adds `entry`; returns it (so `TASK = registry.register(Task())` reads naturally)."""
        if entry.name in self._entries:
            raise ValueError(f"{self.kind} {entry.name!r} is already registered")
        self._entries[entry.name] = entry
        return entry

    def unregister(self, name):
        """Removes the entry called `name` (for tests that register their own)."""
        del self._entries[name]

    @property
    def modules(self):
        return tuple(self._modules() if callable(self._modules) else self._modules)

    def _load(self):
        for module in self.modules:
            importlib.import_module(module)

    def check_name(self, name):
        """Raises ValueError for a name that is neither registered nor declared,
        with the closest known name and the list of them."""
        self._load()
        if name in self._entries or name in self.declared:
            return
        close = difflib.get_close_matches(str(name).lower(), self.names(), n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(f"unknown {self.kind} {name!r}; {hint}known {self.kind}s: "
                         f"{', '.join(self.names())}")

    def get(self, name):
        """The entry called `name` (a declared one's module imported first); an
        unknown name lists the known ones."""
        self.check_name(name)
        if name not in self._entries:
            module = self.declared[name]
            importlib.import_module(module)
            if name not in self._entries:
                raise RuntimeError(f"{module} declares no {self.kind} {name!r}")
        return self._entries[name]

    def names(self):
        """The names of every entry, registered or declared (nothing declared imported)."""
        self._load()
        return sorted({*self._entries, *self.declared})

    def registered(self):
        """`{name: entry}` of the entries registered so far (nothing imported)."""
        return dict(self._entries)

    def entries(self):
        """`{name: entry}` of every entry, the declared ones' modules imported."""
        self._load()
        for module in dict.fromkeys(self.declared.values()):
            importlib.import_module(module)
        return dict(self._entries)
