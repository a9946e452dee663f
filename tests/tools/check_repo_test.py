"""The repository stands on its own (tools/check_repo.py): and each kind of finding is caught."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import check_repo  # pylint: disable=g-import-not-at-top,wrong-import-position


def test_the_checkout_has_no_history_no_outside_path_and_no_dead_link():
  assert check_repo.check(ROOT) == []
  assert len(check_repo.files(ROOT)) > 250  # the whole tree was read


def _write(root, rel, text):
  path = os.path.join(root, rel)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    f.write(text)


def test_a_planted_finding_of_each_kind_is_reported(tmp_path):
  root = str(tmp_path)
  _write(root, "docs/spec.md", "# Spec\n\n## 1. Names\n\n1.2 Top-1 is argmax.\n")
  _write(root, "docs/other.md", "# Other\n\n## The stages, in order\n")
  _write(root, "tf_forget/a.py", '"""Made for issue #12; see ../shared/SPEC.md."""\n'
         '# docs/spec.md §1.2 holds; docs/spec.md §9.9 does not; SPEC §1.2 is the old form.\n')
  _write(root, "README.md", "[ok](docs/other.md#the-stages-in-order) "
         "[gone](docs/none.md) [anchor](docs/other.md#the-stages) [web](https://x.org/a)\n")
  found = check_repo.check(root)
  assert found == [
      "README.md:1: link to a missing file docs/none.md",
      "README.md:1: link to a missing anchor docs/other.md#the-stages",
      "tf_forget/a.py:1: an issue number (issue #12): say what the code is, the history is in git",
      "tf_forget/a.py:1: a path outside the repository (../shared)",
      "tf_forget/a.py:2: docs/spec.md has no §9.9",
      "tf_forget/a.py:2: cite the specification as docs/spec.md §1.2",
  ]


def test_github_anchors():
  assert check_repo.slug("Who may write a run directory (issue #25)") == \
      "who-may-write-a-run-directory-issue-25"
  assert check_repo.slug("The stage contract (`tf_forget/pipeline/driver.py`)") == \
      "the-stage-contract-tf_forgetpipelinedriverpy"
