"""The Bazel BUILD files mirror the code (no Bazel needed).

Evaluates every BUILD file of the workspace in Python, with stand-ins for
Bazel's rules, `glob`, `load` and `native` (BUILD and .bzl files are Starlark,
which for these files is Python syntax), then checks that:

- every .py file under albert_tf/ and tasks/, and every tests/*.py file, is in
  the `srcs` of a py_library or py_test;
- every tests/test_*.py file has exactly one py_test;
- every source, data file and dep named in a BUILD file exists;
- every first-party import of a file (albert_tf..., tasks..., and in tests/
  helpers and conftest) is provided by the file's own target or its
  transitive deps, as Bazel's runfiles need.

Under `bazel test` this reads the checkout itself (through the runfiles
symlinks), like `make test` does.
"""

import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
BUILD_NAMES = ("BUILD.bazel", "BUILD")
PY_RULES = ("py_library", "py_test", "py_binary")
# Directories whose Python files must all be in some target: recursively, and
# (for tests/) the top level only.
PY_TREES = ("albert_tf", "tasks")
TEST_DIR = "tests"


class Target:
    def __init__(self, kind, package, attrs, build_file):
        self.kind = kind
        self.package = package
        self.name = attrs.get("name")
        self.attrs = attrs
        self.build_file = build_file
        self.label = "//%s:%s" % (package, self.name)

    def files(self, attr):
        """Repo-relative paths of the plain file names in `attr` (not labels)."""
        out = []
        for item in _as_list(self.attrs.get(attr)):
            if isinstance(item, str) and not item.startswith((":", "//", "@")):
                out.append(_join(self.package, item))
        return out

    def labels(self, attr):
        return [_resolve(item, self.package) for item in _as_list(self.attrs.get(attr))
                if isinstance(item, str)]


class Workspace:
    """The evaluated BUILD files: packages, targets, explicitly listed files."""

    def __init__(self, root):
        self.root = root
        self.ignored = _bazelignore(root)
        self.packages = {}  # package -> BUILD file (repo-relative)
        self.targets = {}  # label -> Target
        self.listed = []  # (BUILD file, repo-relative path) named explicitly
        self.errors = []
        for dirpath, dirnames, filenames in os.walk(root):
            rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
            rel = "" if rel == "." else rel
            keep = []
            for d in sorted(dirnames):
                sub = _join(rel, d)
                if d == "__pycache__" or sub in self.ignored or (
                        os.path.exists(os.path.join(dirpath, d, "WORKSPACE"))):
                    continue  # ignored, or another repository (third_party stubs)
                keep.append(d)
            dirnames[:] = keep
            for name in BUILD_NAMES:
                if name in filenames:
                    self.packages[rel] = _join(rel, name)
                    break
        for package in sorted(self.packages):
            self._evaluate(package)

    # -- evaluation ---------------------------------------------------------

    def _evaluate(self, package):
        build_file = self.packages[package]
        workspace = self

        def record(kind):
            def rule(**attrs):
                target = Target(kind, package, attrs, build_file)
                if target.name is not None:
                    if target.label in workspace.targets:
                        workspace.errors.append(f"{build_file}: two targets named {target.name!r}")
                    workspace.targets[target.label] = target
            return rule

        class Native:
            def __getattr__(self, kind):
                return record(kind)

        def glob(include, exclude=(), exclude_directories=1, allow_empty=True):
            return _glob(workspace, package, include, exclude)

        def fail(msg, *args):
            raise AssertionError(f"{build_file}: fail(): {msg}")

        def exports_files(srcs, visibility=None, licenses=None):
            for src in srcs:
                workspace.listed.append((build_file, _join(package, src)))
                workspace.targets.setdefault("//%s:%s" % (package, src), Target(
                    "source file", package, {"name": src}, build_file))

        builtins = {
            "glob": glob, "fail": fail, "native": Native(), "select": lambda d, **kw: d,
            "package": lambda **kw: None, "exports_files": exports_files,
            "licenses": lambda *a: None, "len": len, "dict": dict, "list": list,
            "str": str, "sorted": sorted, "enumerate": enumerate, "range": range,
            "print": print, "struct": lambda **kw: kw,
        }

        class Scope(dict):
            """Top-level names of a BUILD file; an unknown name is a rule."""

            def __missing__(self, name):
                if name in builtins:
                    return builtins[name]
                return record(name)

        def load(label, *symbols, **aliases):
            bzl = self._load_bzl(label, package, builtins)
            names = dict(zip(symbols, symbols), **aliases)
            for name, symbol in names.items():
                scope[name] = env[name] = bzl.get(symbol, record(symbol))

        builtins["load"] = load
        scope = Scope()
        env = {"__builtins__": {}, **builtins}  # what comprehensions see
        path = os.path.join(self.root, build_file)
        with open(path) as f:
            code = compile(f.read(), path, "exec")
        try:
            exec(code, env, scope)
        except Exception as e:  # noqa: BLE001 - reported with the file's name
            self.errors.append(f"{build_file}: cannot evaluate: {type(e).__name__}: {e}")

    def _load_bzl(self, label, package, builtins):
        if label.startswith("@"):
            return {}  # Bazel's own (@bazel_tools): rules recorded by name
        label = _resolve(label, package)
        pkg, name = label[2:].split(":")
        path = os.path.join(self.root, _join(pkg, name))
        with open(path) as f:
            code = compile(f.read(), path, "exec")
        namespace = {"__builtins__": {}, **builtins}
        exec(code, namespace)
        return namespace

    # -- queries ------------------------------------------------------------

    def py_targets(self):
        return [t for t in self.targets.values() if t.kind in PY_RULES]

    def closure(self, target):
        """`target` and everything it depends on, transitively (labels)."""
        seen, todo = set(), [target.label]
        while todo:
            label = todo.pop()
            if label in seen or label not in self.targets:
                continue
            seen.add(label)
            todo += self.targets[label].labels("deps")
        return seen


def _as_list(value):
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _join(package, name):
    return f"{package}/{name}" if package else name


def _resolve(label, package):
    """`label` as //package:name."""
    if label.startswith("@"):
        return label
    if label.startswith(":"):
        return "//%s%s" % (package, label)
    if label.startswith("//"):
        if ":" in label:
            return label
        return "%s:%s" % (label, label.rsplit("/", 1)[-1])
    return "//%s:%s" % (package, label)


def _bazelignore(root):
    path = os.path.join(root, ".bazelignore")
    if not os.path.exists(path):
        return set()
    with open(path) as f:
        return {line.strip().strip("/") for line in f
                if line.strip() and not line.startswith("#")}


def _pattern(glob_pattern):
    out = ""
    i = 0
    while i < len(glob_pattern):
        if glob_pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif glob_pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif glob_pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif glob_pattern[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(glob_pattern[i])
            i += 1
    return re.compile(out + r"\Z")


def _glob(workspace, package, include, exclude):
    """Bazel's glob: files of `package`, not crossing into subpackages."""
    base = os.path.join(workspace.root, package)
    files = []
    for dirpath, dirnames, filenames in os.walk(base):
        rel = os.path.relpath(dirpath, base).replace(os.sep, "/")
        rel = "" if rel == "." else rel
        dirnames[:] = sorted(
            d for d in dirnames
            if _join(package, _join(rel, d)) not in workspace.packages
            and _join(package, _join(rel, d)) not in workspace.ignored)
        files += [_join(rel, name) for name in filenames]
    includes = [_pattern(p) for p in include]
    excludes = [_pattern(p) for p in exclude]
    return sorted(f for f in files if any(p.match(f) for p in includes)
                  and not any(p.match(f) for p in excludes))


@pytest.fixture(scope="module")
def workspace():
    return Workspace(ROOT)


def _python_files():
    """The .py files that must be in a target (repo-relative)."""
    out = []
    for tree in PY_TREES:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, tree)):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            rel = os.path.relpath(dirpath, ROOT).replace(os.sep, "/")
            out += [f"{rel}/{name}" for name in filenames if name.endswith(".py")]
    out += [f"{TEST_DIR}/{name}" for name in os.listdir(os.path.join(ROOT, TEST_DIR))
            if name.endswith(".py")]
    return sorted(out)


def _owning_package(path, workspace):
    parts = path.split("/")[:-1]
    while parts:
        if "/".join(parts) in workspace.packages:
            return "/".join(parts)
        parts.pop()
    return ""


def test_build_files_evaluate(workspace):
    assert workspace.packages, f"no BUILD files found under {ROOT}"
    assert not workspace.errors, "\n".join(workspace.errors)


def test_every_python_file_is_in_a_target(workspace):
    covered = {src for t in workspace.py_targets() for src in t.files("srcs")}
    missing = []
    for path in _python_files():
        if path in covered:
            continue
        directory = os.path.dirname(path)
        if directory not in workspace.packages and path.startswith(PY_TREES):
            hint = f"add {directory}/BUILD with a py_library (like albert_tf/layers/BUILD)"
        else:
            hint = f"add it to a target in {workspace.packages.get(_owning_package(path, workspace), 'a BUILD file')}"
        missing.append(f"{path}: not in the srcs of any py_library/py_test; {hint}")
    assert not missing, "\n".join(missing)


def test_one_py_test_per_test_file(workspace):
    problems = []
    for path in _python_files():
        name = os.path.basename(path)
        if not (path.startswith(TEST_DIR + "/") and name.startswith("test_")):
            continue
        tests = [t.label for t in workspace.py_targets()
                 if t.kind == "py_test" and path in t.files("srcs")]
        if len(tests) != 1:
            problems.append(f"{path}: {len(tests)} py_test targets {tests} (want 1) in "
                            f"{workspace.packages.get(TEST_DIR, TEST_DIR + '/BUILD')}")
    assert not problems, "\n".join(problems)


def test_listed_files_and_deps_exist(workspace):
    problems = []
    for build_file, path in workspace.listed:
        if not os.path.exists(os.path.join(ROOT, path)):
            problems.append(f"{build_file}: exports {path}, which does not exist")
    for target in workspace.targets.values():
        for attr in ("srcs", "data", "deps"):
            for item in _as_list(target.attrs.get(attr)):
                if not isinstance(item, str) or item.startswith("@"):
                    continue
                label = _resolve(item, target.package)
                if label in workspace.targets:
                    continue
                package, name = label[2:].split(":")
                if attr != "deps" and package in workspace.packages and os.path.exists(
                        os.path.join(ROOT, _join(package, name))):
                    continue  # a source file
                problems.append(f"{target.build_file}: {target.label} {attr} names "
                                f"{item}, which does not exist")
    assert not problems, "\n".join(problems)


# -- imports versus deps -----------------------------------------------------


def _module_files(workspace):
    """First-party module name -> repo-relative file, for each import scope."""
    modules = {}
    for tree in PY_TREES:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, tree)):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            rel = os.path.relpath(dirpath, ROOT).replace(os.sep, "/")
            for name in filenames:
                if name.endswith(".py"):
                    module = rel.replace("/", ".")
                    if name != "__init__.py":
                        module += "." + name[:-3]
                    modules[module] = f"{rel}/{name}"
    tests = {name[:-3]: f"{TEST_DIR}/{name}"
             for name in os.listdir(os.path.join(ROOT, TEST_DIR)) if name.endswith(".py")}
    return modules, tests


def _imports(path):
    """(module, names, level, line) of every import statement in `path`."""
    with open(os.path.join(ROOT, path)) as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], 0, node.lineno
        elif isinstance(node, ast.ImportFrom):
            yield node.module or "", [a.name for a in node.names], node.level, node.lineno


def _required_modules(path, modules):
    """First-party modules (with their parent packages) that importing `path` runs."""
    package = os.path.dirname(path).replace("/", ".")
    for module, names, level, line in _imports(path):
        if level:
            base = package.split(".")
            base = base[:len(base) - (level - 1)]
            module = ".".join(base + ([module] if module else []))
        candidates = [module] + [f"{module}.{name}" for name in names]
        for candidate in candidates:
            if candidate not in modules:
                continue
            parts = candidate.split(".")
            for i in range(1, len(parts) + 1):
                parent = ".".join(parts[:i])
                if parent in modules:
                    yield parent, line


def test_deps_provide_every_first_party_import(workspace):
    modules, test_modules = _module_files(workspace)
    owners = {}
    for target in workspace.py_targets():
        for src in target.files("srcs"):
            owners.setdefault(src, set()).add(target.label)
    problems = {}
    for target in sorted(workspace.py_targets(), key=lambda t: t.label):
        available = workspace.closure(target)
        for src in target.files("srcs"):
            if not src.endswith(".py") or not os.path.exists(os.path.join(ROOT, src)):
                continue
            scope = dict(modules)
            if src.startswith(TEST_DIR + "/"):
                scope.update(test_modules)
            for module, line in _required_modules(src, scope):
                providers = owners.get(scope[module], set())
                if providers & available:
                    continue
                wanted = " or ".join(sorted(providers)) or f"a target with {scope[module]}"
                key = (src, line, target.label, wanted)
                if len(module) > len(problems.get(key, "")):
                    problems[key] = module  # the deepest module of the import
    messages = [f"{src}:{line}: imports {module}, but {label} "
                f"({workspace.targets[label].build_file}) does not depend on {wanted}"
                for (src, line, label, wanted), module in sorted(problems.items())]
    assert not messages, "\n".join(messages)
