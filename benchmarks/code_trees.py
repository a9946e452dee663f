"""The code trees a benchmark compares, made ready to run as an installed package runs.

    trees = code_trees.compiled(["/tmp/base", "."])   # absolute paths, modules compiled

Each tree's `tf_forget` and `eval` modules are compiled to .pyc first (an installed package's
are), and `env(tree)` is the environment a tree's command runs in: its own code on PYTHONPATH,
modules loaded from their .pyc (`PYTHONDONTWRITEBYTECODE` dropped).
"""

import os
import subprocess
import sys


def compiled(trees):
  """`trees` as absolute paths, each one's modules compiled."""
  trees = [os.path.abspath(t) for t in trees]
  for tree in trees:
    subprocess.run(
      [sys.executable, "-m", "compileall", "-q", "tf_forget", "eval"],
      cwd=tree,
      check=True,
      stdout=subprocess.DEVNULL,
    )
  return trees


def env(tree, **extra):
  """The environment of a command of `tree`: this one's, with `extra`, PYTHONPATH=`tree`,
  unbuffered output, the legacy Keras, and bytecode loaded from .pyc."""
  out = dict(os.environ, PYTHONUNBUFFERED="1", TF_USE_LEGACY_KERAS="1", PYTHONPATH=tree, **extra)
  out.pop("PYTHONDONTWRITEBYTECODE", None)
  return out
