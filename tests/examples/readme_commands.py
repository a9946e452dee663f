"""The shell commands of an example's README, for the tests that run them as written."""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def commands(readme, placeholder, out):
  """The first ```sh block of `readme` (a path below the repository root), one command per
  line, with `placeholder` (the README's output directory) replaced by `out` and the venv's
  interpreter by the one running the test."""
  with open(os.path.join(ROOT, readme), encoding="utf-8") as f:
    block = re.search(r"```sh\n(.*?)```", f.read(), re.S).group(1)
  block = block.replace("\\\n", " ").replace(placeholder, out)
  block = block.replace(".venv/bin/python", sys.executable).replace(
    "PYTHONPATH=.", f"PYTHONPATH={ROOT}"
  )
  return [line for line in block.splitlines() if line.strip()]
