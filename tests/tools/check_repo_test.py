"""The repository stands on its own (tools/check_repo.py): and each kind of finding is caught.

The check reads this file too: the planted findings are spelled in pieces (`ISSUE`, `HASH`,
`UP`, `SPEC`, `OLD_SPEC`) so that the file itself has none.
"""

import os
import sys

from tests import files

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import check_repo

ISSUE = "issue " + "#"  # and digits: an issue number
HASH = "#"  # and digits closing a parenthesis: a bare issue number
UP = ".." + "/"  # and `shared`: a path outside the repository
SPEC = "docs/spec.md" + " §"  # and a section: a citation of the specification
OLD_SPEC = "SPEC" + " §"  # and a section: the citation's old form
HISTORY = "say what the code is, the history is in git"


def test_the_checkout_has_no_history_no_outside_path_and_no_dead_link():
  assert check_repo.check(ROOT) == []
  checked = check_repo.files(ROOT)
  assert len(checked) > 550  # the whole tree was read
  for rel in (
    "README.md",
    "tf_forget/__init__.py",
    "docs/spec.md",
    "tests/BUILD",
    "tests/tools/check_repo_test.py",
    "benchmarks/stats_bench.py",
    "tools/check_repo.py",
    "examples/BUILD",
    "examples/repair/README.md",
  ):
    assert os.path.join(ROOT, rel) in checked, rel


def test_a_planted_finding_of_each_kind_is_reported(tmp_path):
  root = str(tmp_path)
  files.write_text(root, "docs/spec.md", "# Spec\n\n## 1. Names\n\n1.2 Top-1 is argmax.\n")
  files.write_text(root, "docs/other.md", "# Other\n\n## The stages, in order\n")
  files.write_text(
    root,
    "tf_forget/a.py",
    f'"""Made for {ISSUE}12; see {UP}shared/SPEC.md."""\n'
    f"# {SPEC}1.2 holds; {SPEC}9.9 does not; {OLD_SPEC}1.2 is the old form.\n",
  )
  files.write_text(
    root,
    "README.md",
    "[ok](docs/other.md#the-stages-in-order) "
    "[gone](docs/none.md) [anchor](docs/other.md#the-stages) [web](https://x.org/a)\n",
  )
  files.write_text(root, "tests/BUILD", f"# The wheel ({HASH}39).\n")
  files.write_text(
    root,
    "benchmarks/b.py",
    f"# Seen in {HASH}25/{HASH}27 and in {HASH}3's target.\n"
    'CSS = "color:#222;border:1px solid #999}"  # a colour, not an issue\n'
    "# CONV_2D #2 (sequential/conv2d_1); tensorflow/model-optimization#1017 (open).\n",
  )
  files.write_text(root, "examples/x/notes.txt", f"Later ({HASH}7's fix).\n")
  found = check_repo.check(root)
  assert found == [
    "README.md:1: link to a missing file docs/none.md",
    "README.md:1: link to a missing anchor docs/other.md#the-stages",
    f"tf_forget/a.py:1: an issue number ({ISSUE}12): {HISTORY}",
    f"tf_forget/a.py:1: a path outside the repository ({UP}shared)",
    "tf_forget/a.py:2: docs/spec.md has no §9.9",
    "tf_forget/a.py:2: cite the specification as docs/spec.md §1.2",
    f"tests/BUILD:1: an issue number ({HASH}39): {HISTORY}",
    f"benchmarks/b.py:1: an issue number ({HASH}25): {HISTORY}",
    f"examples/x/notes.txt:1: an issue number ({HASH}7): {HISTORY}",
  ]


def test_github_anchors():
  assert (
    check_repo.slug(f"Who may write a run directory ({ISSUE}25)")
    == "who-may-write-a-run-directory-issue-25"
  )
  assert (
    check_repo.slug("The stage contract (`tf_forget/pipeline/driver.py`)")
    == "the-stage-contract-tf_forgetpipelinedriverpy"
  )
