"""py_pytest: a py_test whose file is run by pytest (one target per test file)."""

def py_pytest(name, src, deps = [], data = [], size = "small", **kwargs):
    """Declares a py_test that runs `src` under pytest.

    Args:
      name: target name.
      src: the test file (one per target).
      deps: py_library dependencies.
      data: runtime data files.
      size: Bazel test size.
      **kwargs: passed to py_test (tags, shard_count, timeout, ...).
    """
    native.py_test(
        name = name,
        srcs = [src, "//tools:pytest_main.py"],
        main = "//tools:pytest_main.py",
        args = ["$(rootpath %s)" % src],
        deps = deps + ["//tests:conftest"],
        data = data,
        size = size,
        python_version = "PY3",
        srcs_version = "PY3",
        **kwargs
    )
