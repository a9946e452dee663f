"""The end-to-end tests' one tiny population, trained once and committed.

`FLAGS` are the population flags of every tiny end-to-end audit (2 members x {dense,
prune_0.5} of the `tiny` preset, 40 steps on the embedded digits). Its trained members are
committed under `tests/fixtures/tiny/members/`, their float32 `.tflite` files under
`tests/fixtures/tiny/tflite/` (regenerate both: `tests/fixtures/make_fixtures.py tiny`). A test
copies them into its `--out` (`copy_members`) before its first audit, which then reuses them
instead of training and converting — and checks that it kept the members (`assert_reused`), so
a change that makes the committed members stale fails here, in one line saying how to
regenerate them (stale files are converted again, which the export's own records decide).
Training itself is tested where training is the point (the interrupt and lock tests of
`audit_faults_test.py`, `audit_properties_test.py`, the executor tests).
"""

import hashlib
import os

from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(TESTS, "fixtures", "tiny")
MEMBERS = 2
VARIANTS = ("dense", "prune_0.5")
STEPS = 40
FLAGS = (
  "--preset=tiny",
  f"--members={MEMBERS}",
  f"--variants={','.join(VARIANTS)}",
  f"--steps={STEPS}",
)
# The same population as keywords of `tf_forget.audit` / absl's `flagsaver`.
CONFIG = dict(preset="tiny", members=MEMBERS, variants=list(VARIANTS), steps=STEPS)


def _models(root, variants):
  """{relative path: sha256} of the members' model.keras files under `root`."""
  out = {}
  for variant in variants:
    for k in range(MEMBERS):
      rel = os.path.join("members", variant, str(k), "model.keras")
      with filesystem.open_file(filesystem.join(root, rel)) as f:
        out[rel] = hashlib.sha256(f.read()).hexdigest()
  return out


def copy_members(out, variants=VARIANTS):
  """Puts the committed tiny members of `variants` under `out/members/`, and their float32
  `.tflite` files with their records under `out/tflite/` (creating `out`, a local path or a
  URL such as `ram://...`); returns `out`."""
  for root in ("members", "tflite"):
    for variant in variants:
      src = os.path.join(FIXTURE, root, variant)
      for folder, _, files in os.walk(src):
        rel = os.path.relpath(folder, src)
        target = filesystem.join(out, root, variant, *([] if rel == "." else [rel]))
        filesystem.makedirs(target)
        for name in files:
          fileio.copy(os.path.join(folder, name), filesystem.join(target, name))
  return out


def assert_reused(out, variants=VARIANTS):
  """Fails unless the audit into `out` kept the committed members of `variants` as they are (no
  retraining)."""
  if _models(str(out), variants) != _models(FIXTURE, variants):
    raise AssertionError(
      "the audit retrained the committed tiny members: they are stale for "
      "this code; regenerate them with tests/fixtures/make_fixtures.py tiny"
    )
