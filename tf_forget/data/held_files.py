"""The bytes of a split's files as they were hashed, held for the audit that hashed them.

`fingerprint.fingerprint` reads every file of a split it does not know to hash it. Within
`holding()` (one audit: `tf_forget.pipeline.audit_lib.run_audit`) it also keeps what it read,
under the split's content digest (`fingerprint.digest`), when every file of the split was read
and all fit `HELD_BYTES`. A data set whose recorded content is that digest then decodes these
bytes (`record_reader.RecordReader.batches`) instead of reading each file a second time: the images
audited are the bytes whose digest the run records, even if a file changes meanwhile. A task in
another process, or a split partly taken from the fingerprint's cache, reads the files.

Standard library only.
"""

import contextlib

# Encoded bytes held at once (10,000 MNIST PNGs take 3 MB; a split over it is read again).
HELD_BYTES = 64 << 20

_held = None  # {digest: {relative path: bytes}} within `holding`, else None


@contextlib.contextmanager
def holding():
  """Within it, `keep` holds what it is given and `get` finds it; the bytes go when it ends."""
  global _held
  outer, _held = _held, {} if _held is None else _held
  try:
    yield
  finally:
    _held = outer


def active():
  """Whether `keep` holds anything now (inside `holding`)."""
  return _held is not None


def keep(digest, files):
  """Holds {relative path: bytes} of the split whose content digest is `digest`, if inside
  `holding` and they fit `HELD_BYTES` beside what is held already."""
  if _held is None:
    return
  size = sum(len(data) for data in files.values())
  held = sum(len(data) for other in _held.values() for data in other.values())
  if size + held <= HELD_BYTES:
    _held[digest] = dict(files)


def get(digest):
  """{relative path: bytes} held for `digest`, or None."""
  if _held is None or digest is None:
    return None
  return _held.get(digest)
