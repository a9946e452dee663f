"""`--help` of the stage binaries, section by section, and `app.sectioned_help`.

Each binary (`evaluate_population`, `export_population`, `train_population`,
`generate_corruptions`) runs in a subprocess, as a user runs it: `--help` exits 0 with the
binary's section titles in order, and lists each flag once; the flags are those absl lists under
`--helpfull` (a second listing, made by absl) for the module that defines them,
`tf_forget.commands.<binary>_command` (the binary defines none of its own), plus `--verbose`
(`tf_forget.cli.app`'s). `eval/audit.py`'s `--help` is tests/e2e/audit_help_test.py's.
"""

import os
import re
import subprocess
import sys

from absl import flags
import pytest

from tests.cli import help_listing
from tf_forget.cli import app

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARIES = {  # the binary's file -> its --help section titles, in order
  "eval/evaluate_population.py": [
    "what to read and write",
    "how the files run",
    "what is kept and compared",
  ],
  "tflite_export/export_population.py": ["what to read and write", "what to make"],
  "tf_forget/train/train_population.py": ["what to read and write", "what to train"],
  "tf_forget/corruptions/generate_corruptions.py": [
    "what to read and write",
    "what to make",
    "how the work runs",
  ],
}


def _run(path, arg):
  """`subprocess.CompletedProcess` of `python <ROOT>/<path> <arg>` (this checkout, tf_keras)."""
  env = dict(os.environ, PYTHONPATH=ROOT, TF_USE_LEGACY_KERAS="1", CUDA_VISIBLE_DEVICES="")
  return subprocess.run(
    [sys.executable, os.path.join(ROOT, path), arg],
    env=env,
    text=True,
    capture_output=True,
    timeout=300,
    check=False,
  )


@pytest.mark.parametrize("path", sorted(BINARIES))
def test_help_lists_every_flag_once_in_its_section(path):
  result = _run(path, "--help")
  assert result.returncode == 0, result.stderr[-2000:]
  text = result.stdout
  titles = BINARIES[path]
  assert [line[:-1] for line in text.splitlines() if line[:-1] in titles] == titles
  listed = re.findall(r"^  --(\w+):", text, flags=re.M)
  assert len(listed) == len(set(listed))  # each flag once
  full = _run(path, "--helpfull")
  assert full.returncode == 0, full.stderr[-2000:]
  command = "tf_forget.commands." + os.path.basename(path)[:-3] + "_command"
  own = help_listing.flags_under(full.stdout, re.escape(command) + ":")
  assert not help_listing.flags_under(full.stdout, r".*" + re.escape(path) + ":")
  common = help_listing.flags_under(full.stdout, r"tf_forget\.cli\.app:")
  assert len(own) >= 6 and common == {"verbose"}
  assert set(listed) == own | common
  assert text.splitlines()[0] == full.stdout.splitlines()[0]  # the docstring first


def _scratch_flags():
  """A `FlagValues` with three flags of this module: a, b (default 2) and c."""
  fv = flags.FlagValues()
  flags.DEFINE_string("a", None, "Flag a.", flag_values=fv)
  flags.DEFINE_integer("b", 2, "Flag b.", flag_values=fv)
  flags.DEFINE_bool("c", False, "Flag c.", flag_values=fv)
  return fv


def test_sectioned_help_reads_each_flag_and_refuses_a_bad_listing():
  fv = _scratch_flags()
  text = app.sectioned_help("The doc.", [("first", ["a", "b"]), ("second", ["c"])], fv, __name__)
  assert text.splitlines()[:7] == [
    "The doc.",
    "",
    "first:",
    "  --a: Flag a.",
    "  --b: Flag b. (default: '2')",
    "",
    "second:",
  ]
  for sections, message in (
    ([("first", ["a", "b"])], "flags in no --help section: c"),
    ([("first", ["a", "b"]), ("second", ["c", "a"])], "flags in two --help sections: a"),
    ([("first", ["a", "b", "c", "d"])], "no such flags: d"),
  ):
    with pytest.raises(AssertionError, match=message):
      app.sectioned_help("The doc.", sections, fv, __name__)
