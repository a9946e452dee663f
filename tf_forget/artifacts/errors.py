"""The one error base class of tf_forget, and the one-line message rule (CONVENTIONS.md).

Every error a user can cause with bad input or a bad file (an unknown data set, a variant
name that does not parse, an artifact that cannot be read, an output that cannot be written)
is a subclass of `Error`, with a one-line message. The binaries catch `Error` only and print
that line with exit status 1; anything else (a `KeyError` from a bug) keeps its traceback.

`Error` derives from `ValueError` so that code (and tests) written against the per-module
`ValueError` subclasses keep working.

`tf_forget.stats` keeps its own `StatsInputError(ValueError)`: that package imports nothing of
the pipeline (CONVENTIONS.md), and its callers (`tf_forget.report`) validate every input before
calling it, so a `StatsInputError` reaching a binary is a bug and should keep its traceback.

Standard library only.
"""

MAX_MESSAGE = 300


def one_line(error, limit=MAX_MESSAGE):
  """`str(error)` (or an OSError's `strerror`) on one line, at most `limit` characters."""
  if isinstance(error, OSError) and error.strerror and not isinstance(error, Error):
    text = error.strerror
  else:
    text = str(error) or type(error).__name__
  return " ".join(text.split())[:limit]


class Error(ValueError):
  """Base class of every tf_forget error a user can cause (one-line message)."""


class ReadError(Error):
  """An artifact that is missing, truncated, not of its schema or inconsistent."""


class SchemaError(ReadError):
  """A readable JSON artifact that is not an object of the schema its reader expects."""


class WriteError(Error):
  """An artifact that cannot be written (read-only directory, full disk, ...)."""


def write_error(path, error):
  """A `WriteError` "cannot write <path>: <reason>" from an OSError / TensorFlow OpError."""
  reason = getattr(error, "message", None) if not isinstance(error, OSError) else None
  return WriteError(
    f"cannot write {path}: {' '.join(str(reason).split()) if reason else one_line(error)}"
  )


def read_error(path, error, what="artifact"):
  """A `ReadError` "cannot read <what> <path>: <reason>"."""
  return ReadError(f"cannot read {what} {path}: {one_line(error, 200)}")
