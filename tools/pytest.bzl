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

def py_pytest_suite(name, srcs, deps = [], data = [], size = "large", **kwargs):
    """Declares one py_test that runs several test files in one pytest process.

    The files of a test package that can share a process (none defines absl flags, or all
    define the same command's: the audit's, run in-process) pay for one interpreter and one
    TensorFlow import together; a file that cannot stays a `py_pytest` of its own
    (docs/testing.md).

    Args:
      name: target name.
      srcs: the test files.
      deps: py_library dependencies (those of every file).
      data: runtime data files.
      size: Bazel test size (the suite's sum of times sets it).
      **kwargs: passed to py_test.
    """
    native.py_test(
        name = name,
        srcs = srcs + ["//tools:pytest_main.py"],
        main = "//tools:pytest_main.py",
        args = ["$(rootpath %s)" % src for src in srcs],
        deps = deps + ["//tests:conftest"],
        data = data,
        size = size,
        python_version = "PY3",
        srcs_version = "PY3",
        **kwargs
    )
