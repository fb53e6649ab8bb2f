"""pytest_tests: one Bazel py_test per pytest file, run by bazel_pytest.py."""

def pytest_tests(name, srcs, deps = [], data = [], size = "medium", overrides = {}, **kwargs):
    """Declares a py_test per file in `srcs`, and a test_suite `name` of them all.

    Each test `test_x` runs `pytest tests/test_x.py` (through bazel_pytest.py),
    so fixtures such as tmp_path and monkeypatch, conftest.py and pytest.ini
    work as under `make test`.

    Args:
      name: the test_suite of all the tests.
      srcs: the pytest files, e.g. glob(["test_*.py"]).
      deps: py_library deps of every test.
      data: runfiles of every test.
      size: the default test size.
      overrides: {file: {attribute: value}} for single tests, e.g. a larger
        size or tags; "deps" and "data" there are added to the shared ones.
      **kwargs: passed to every py_test.
    """
    for src in overrides:
        if src not in srcs:
            fail("pytest_tests: override for %s, which is not in srcs" % src)
    tests = []
    for src in srcs:
        test = src[:-len(".py")]
        attrs = dict(kwargs)
        attrs["size"] = size
        attrs.update(overrides.get(src, {}))
        native.py_test(
            name = test,
            srcs = ["bazel_pytest.py", src],
            main = "bazel_pytest.py",
            args = ["$(rootpath %s)" % src],
            deps = deps + attrs.pop("deps", []),
            data = data + attrs.pop("data", []),
            python_version = "PY3",
            srcs_version = "PY3",
            # tests/ is not a package: pytest puts it on sys.path so that
            # `helpers` and `conftest` import. No generated __init__.py files.
            legacy_create_init = False,
            **attrs
        )
        tests.append(":" + test)
    native.test_suite(
        name = name,
        tests = tests,
    )
