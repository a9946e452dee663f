"""Python's cycle collector kept off the objects TensorFlow's import made.

Importing TensorFlow and Keras leaves ~400,000 long-lived Python objects; every full collection
of the cycle collector walks all of them (0.2 s on a 2-core machine), and an audit's stages make
enough objects to start several. `gc.freeze` moves the objects alive now out of the collector's
reach, so later full collections walk only what was made since:

- `frozen()`: around an audit in the caller's process, which gets its collector back as it
  was when the audit ends (everything frozen is unfrozen; garbage among it is collected then);
- `settle()`: in a pool worker, once the first task has imported TensorFlow: one full
  collection, then whatever survives it is frozen for the worker's life (a worker's later
  garbage is collected as usual);
- `skip_final_collection()`: in a command's process, everything is frozen when it exits, so the
  interpreter's last full collection walks nothing (with TensorFlow loaded it takes 1.2-1.5 s
  of a command's wall time; the memory goes back with the process).

Standard library only.
"""

import atexit
import contextlib
import gc
import sys

_SETTLED = {"done": False}


@contextlib.contextmanager
def frozen():
  """Freezes the objects alive now for the duration (nothing, if some are frozen already)."""
  if gc.get_freeze_count():
    yield
    return
  gc.freeze()
  try:
    yield
  finally:
    gc.unfreeze()


def settle():
  """Once per process, after TensorFlow is imported: collects, then freezes what is alive."""
  if _SETTLED["done"] or "tensorflow" not in sys.modules:
    return
  _SETTLED["done"] = True
  gc.collect()
  gc.freeze()


def skip_final_collection():
  """Freezes what is alive when this process exits (`atexit`, after the handlers registered
  later): its last full collection has nothing to walk."""
  atexit.register(gc.freeze)
