"""Whole splits decoded once per process and kept, within a memory budget.

An audit evaluates every file (and the reference) on the same images: a user's split whose
content digest is recorded is decoded whole once per process and kept under a key naming the
data set, its options (the digest among them) and the split (`record_reader.RecordReader.batches`).
`ahead` starts that decoding in a thread, so that an audit running its tasks in its own process
decodes while its earlier stages run (`tf_forget.pipeline.audit_lib`); whoever asks for the
split first waits for it, and gets its error if the decoding failed.

Standard library only: the decoding itself is the caller's `make`.
"""

import concurrent.futures
import threading

# Decoded pixels kept at once (CIFAR-10's test split takes 30 MB, MNIST's 8 MB).
DECODED_BYTES = 256 << 20

_kept = {}  # key -> (Examples or the Future of a decoding started ahead, its size in bytes)
_lock = threading.Lock()


def forget():
  """Drops every split this process keeps (a decoding under way still ends, unkept)."""
  with _lock:
    _kept.clear()


def get(key):
  """The `Examples` kept under `key` (waiting for a decoding started ahead), or None.

  Raises:
    Whatever the decoding started ahead raised (the split is then no longer kept).
  """
  with _lock:
    value = _kept.get(key, (None, 0))[0]
  if not isinstance(value, concurrent.futures.Future):
    return value
  try:
    return value.result()
  except BaseException:
    with _lock:
      if _kept.get(key, (None, 0))[0] is value:
        del _kept[key]
    raise


def decode(key, size, make):
  """`make()` (the whole split, `size` bytes of pixels) kept under `key`, or None if `size` is
  over `DECODED_BYTES` (the caller streams the split instead)."""
  kept = get(key)
  if kept is not None:
    return kept
  if not _make_room(size):
    return None
  examples = make()
  with _lock:
    _kept[key] = (examples, size)
  return examples


def ahead(key, size, make):
  """Starts `make()` in a thread, kept under `key` as `decode` keeps it; its Future, or None if
  the split is kept already or over `DECODED_BYTES`."""
  future = concurrent.futures.Future()
  with _lock:
    if key in _kept:
      return None
  if not _make_room(size):
    return None
  with _lock:
    _kept[key] = (future, size)

  def run():
    try:
      examples = make()
    except BaseException as e:  # given to whoever waits (`get`)
      future.set_exception(e)
      return
    with _lock:
      if _kept.get(key, (None, 0))[0] is future:
        _kept[key] = (examples, size)
    future.set_result(examples)

  threading.Thread(target=run, name="tf_forget decode", daemon=True).start()
  return future


def _make_room(size):
  """Whether `size` bytes fit; drops the oldest kept splits until they do."""
  if size > DECODED_BYTES:
    return False
  with _lock:
    while _kept and size + sum(s for _, s in _kept.values()) > DECODED_BYTES:
      del _kept[next(iter(_kept))]
  return True
