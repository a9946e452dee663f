"""Is an artifact current? Recorded `inputs` against the current inputs' hashes.

Every artifact records `inputs`: {name: sha256} of what it was made from (a member's
`model.keras`, the `.tflite` bytes an evaluation ran, the identity of its input split, ...;
docs/artifacts/*.md). A stage reuses an artifact only if it is readable and every recorded
input equals the current one; otherwise it redoes it and logs why, e.g.

    redo prune_0.9/0 test: its .tflite changed since it was evaluated

`Status` carries that reason.

An artifact's own bytes are checked too: its writer records the sha256 of the file it wrote
next to it (`record_own`: `<file>.sha256`), and `status(..., own=path)` redoes a file whose
bytes are no longer those (`own_reason`) — another valid file copied over it, an edit — or
that has no such record, rather than trusting the metadata inside it:

    redo user_int8/0 test: its bytes are not those written (sha256 differs from the one recorded)

Standard library, `fileio` and `hashing` only.
"""

import dataclasses
from typing import Optional

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import hashing

# What a changed input means, for the log line ("its <label> changed since it was <verb>").
LABELS = {
  "model": "model.keras",
  "tflite": ".tflite",
  "split": "input split",
  "protocol": "noise protocol",
  "config": "config",
  "representative": "representative data",
  "converter": "converter options",
  "gradient": "gradient g (docs/spec.md §6.2)",
  "gradient_protocol": "gradient protocol",
  "train_data": "train data (--train)",
}


@dataclasses.dataclass(frozen=True)
class Status:
  """Whether an artifact can be reused, and if not, why (one line)."""

  current: bool
  reason: Optional[str] = None

  def __bool__(self):
    return self.current


CURRENT = Status(True)
MISSING = Status(False, "missing")
OWN_SUFFIX = ".sha256"  # `<file>.sha256`: the sha256 of the file as its writer wrote it


def own_path(path):
  """Where the sha256 of the artifact at `path` is recorded: `<path>.sha256`."""
  return f"{path}{OWN_SUFFIX}"


def record_own(path):
  """Records the sha256 of the file just written at `path` (`own_path`, atomically); returns it.

  Raises:
    errors.WriteError: the file cannot be read back or the record written.
  """
  try:
    sha = hashing.file_sha256(path)
  except OSError as e:
    raise errors.write_error(path, e) from e
  fileio.write_bytes(own_path(path), f"{sha}\n".encode("ascii"))
  return sha


def own_reason(path):
  """Why the file at `path` is not the one its writer recorded (`record_own`), or None if it is."""
  try:
    recorded = fileio.read_bytes(own_path(path)).decode("ascii", "replace").strip()
  except errors.ReadError:
    return "it has no record of its own sha256 (written by an older version, or the record is gone)"
  sha = hashing.file_sha256_or_none(path)
  if sha is None:
    return "it is unreadable"
  if sha != recorded:
    return "its bytes are not those written (sha256 differs from the one recorded)"
  return None


def changed(recorded, expected, verb="made"):
  """The reason the recorded inputs differ from the expected ones, or None if they match.

  Args:
    recorded: the artifact's `inputs` dict (or None for an artifact made before lineage).
    expected: {name: sha256 or JSON value} of the current inputs; every key must match.
    verb: how the artifact was made ("evaluated", "exported", "trained").
  """
  if not isinstance(recorded, dict):
    return "it records no inputs (made by an older version)"
  for name, value in expected.items():
    if recorded.get(name) != value:
      label = LABELS.get(name, name)
      if recorded.get(name) is None:
        return f"it does not record its {label}"
      return f"its {label} changed since it was {verb}"
  return None


def file_reason(path, recorded_sha256, label, verb):
  """Why the file at `path` is not the one an artifact recorded, or None if it is.

  Args:
    path: the file (a member's `model.keras`, an export's `.tflite`).
    recorded_sha256: the sha256 the artifact recorded for it.
    label, verb: for the reason, "its <label> is missing" / "changed since it was <verb>".
  """
  sha = hashing.path_sha256_or_none(path)  # a directory too (an imported SavedModel)
  if sha is None:
    return f"its {label} is missing"
  if sha != recorded_sha256:
    return f"its {label} changed since it was {verb}"
  return None


def status(read, expected, verb="made", exists=None, extra=None, own=None):
  """`Status` of an artifact: its own bytes as written (`own`), readable (via `read()` ->
  metadata dict) and with `expected` inputs.

  Args:
    read: zero-argument callable returning the artifact's metadata dict (with `inputs`);
      raising `errors.Error` (unreadable, wrong schema) means "redo".
    expected: see `changed`.
    verb: see `changed`.
    exists: optional zero-argument callable; False means `MISSING`.
    extra: optional callable(metadata) -> reason or None, a further requirement.
    own: optional path of the artifact's file, whose sha256 must be the one its writer
      recorded (`own_reason`).
  """
  if exists is not None and not exists():
    return MISSING
  try:
    meta = read()
  except errors.Error as e:
    return Status(False, f"it is unreadable ({errors.one_line(e, 160)})")
  reason = changed(meta.get("inputs"), expected, verb)
  if reason is None and extra is not None:
    reason = extra(meta)
  if reason is None and own is not None:
    reason = own_reason(own)
  return CURRENT if reason is None else Status(False, reason)
