"""File-system primitives for local paths and URLs (`gs://`, `ram://`), no TensorFlow import.

Local paths go through `os`; paths with a URL scheme go through `tf.io.gfile`, imported only for
them. TensorFlow's in-memory `ram://` file system (the tests' stand-in for a bucket)
matches names by string prefix: with only `ram://a/deploy.tmp/` there, `tf.io.gfile` says
`ram://a/deploy` exists and is a directory, and lists `.tmp` in it. `exists`, `isdir` and
`listdir` check `ram://` entries against their parent's listing, up to the root, and `rmtree`
deletes `ram://` trees entry by entry. Only directories made with `makedirs` are listed there.

Atomic writes and checked reads of artifacts are `tf_forget.artifacts.fileio`'s; a failed
removal or `makedirs` is an `errors.WriteError`. A URL whose scheme `tf.io.gfile` does not
serve (s3://, http://) or that cannot be reached (no network, no credentials) is a one-line
`errors.ReadError` from `exists`, `isdir`, `isfile` and `listdir`
(`url_error`), never a TensorFlow traceback.
"""

import builtins
import collections
import os
import shutil

from tf_forget.artifacts import errors


def is_url(path):
  """Whether `path` has a URL scheme (gs://...) and goes through `tf.io.gfile`."""
  return "://" in str(path)


def user_path(path):
  """A path given on a command line, as the command will use it.

  `scheme://` paths (gs://, ram://) are kept as they are; `~` is expanded; a relative local
  path is relative to where the user ran the command (`BUILD_WORKING_DIRECTORY` under
  `bazel run`, whose own working directory is the runfiles tree), and returned absolute.
  None stays None. Every path flag of every binary goes through this one function.
  """
  if path is None or is_url(path):
    return path
  path = os.path.expanduser(str(path))
  base = os.environ.get("BUILD_WORKING_DIRECTORY") or os.getcwd()
  return os.path.normpath(os.path.join(base, path))


def gfile():
  import tensorflow as tf  # URL paths only

  return tf.io.gfile


def tf_errors():
  """The TensorFlow OpError class if TensorFlow is loaded, else an empty tuple."""
  import sys

  tf = sys.modules.get("tensorflow")
  errors_mod = getattr(tf, "errors", None) if tf is not None else None
  return (errors_mod.OpError,) if errors_mod is not None else ()


def io_errors():
  """The exception classes a file system call raises: OSError, and TensorFlow's OpError."""
  return (OSError,) + tf_errors()


def _is_ram(path):
  return str(path).startswith("ram://")


def _ram_exists(path):
  """Whether `path` is an entry of `ram://` (whose own `exists` matches name prefixes)."""
  path = str(path).rstrip("/")
  parent, name = path.rsplit("/", 1)
  if parent == "ram:/":
    parent = "ram://"
  elif not name or not _ram_exists(parent):
    return not name  # "ram://" itself
  try:
    return name in gfile().listdir(parent) and gfile().exists(path)
  except tf_errors():  # an empty `ram://` has no root directory
    return False


def url_error(path, error):
  """The one-line `errors.ReadError` of a TensorFlow error about the URL `path`: its scheme has
  no file system in `tf.io.gfile` (s3://, http://, ...), or it cannot be reached (no network,
  no credentials, no such bucket)."""
  if type(error).__name__ == "UnimplementedError":
    scheme = str(path).split("://", 1)[0]
    return errors.ReadError(
      f"{path}: {scheme}:// paths are not supported (tf.io.gfile has no "
      f"{scheme!r} file system); give a local path or gs://"
    )
  reason = " ".join(str(getattr(error, "message", None) or error).split())
  return errors.ReadError(f"cannot reach {path}: {reason}")


def _on_url(path, fn):
  """`fn(path)` of `tf.io.gfile`; a TensorFlow error as `url_error`."""
  try:
    return fn(path)
  except tf_errors() as e:
    raise url_error(path, e) from e


def exists(path):
  """Whether `path` exists.

  Raises:
    errors.ReadError: a URL whose scheme is not supported or that cannot be reached
      (`url_error`).
  """
  if not is_url(path):
    return os.path.exists(path)
  return _ram_exists(path) if _is_ram(path) else _on_url(path, gfile().exists)


def _url_isdir(path):
  """Whether the URL `path` is a directory (`tf.io.gfile.isdir` says False for a URL it cannot
  reach: its `stat` tells "missing" from "unreachable")."""
  if _is_ram(path):
    return _ram_exists(path) and gfile().isdir(path)
  try:
    return bool(gfile().stat(path).is_directory)
  except tf_errors() as e:
    if type(e).__name__ == "NotFoundError":
      return False
    raise url_error(path, e) from e


def isdir(path):
  """Whether `path` is a directory (`errors.ReadError` as `exists`)."""
  if not is_url(path):
    return os.path.isdir(path)
  return _url_isdir(path)


def isfile(path):
  """Whether `path` is an existing regular file (not a directory; `errors.ReadError` as
  `exists`)."""
  if is_url(path):
    return exists(path) and not _url_isdir(path)
  return os.path.isfile(path)


def join(*parts):
  """`os.path.join` (URL paths use "/" too)."""
  return os.path.join(*parts)


def abspath(path):
  """`os.path.abspath` of a local path; a URL path as it is."""
  return str(path) if is_url(path) else os.path.abspath(path)


def listdir(path):
  """Sorted entry names of a directory ([] if it does not exist)."""
  if not isdir(path):
    return []
  if not is_url(path):
    return sorted(os.listdir(path))
  names = sorted(n.rstrip("/") for n in _on_url(path, gfile().listdir))
  if _is_ram(path):  # phantom children of a sibling sharing the prefix (module docstring)
    names = [n for n in names if gfile().exists(join(path, n))]
  return names


def walk(top):
  """Yields (dirpath, dirnames, filenames) top-down like `os.walk`, names sorted.

  Nothing is yielded if `top` is not a directory. Pruning `dirnames` in place skips them.
  """
  if not is_url(top):
    for dirpath, dirnames, filenames in os.walk(top):
      dirnames.sort()
      yield dirpath, dirnames, sorted(filenames)
    return
  if not isdir(top):
    return
  dirnames, filenames = [], []
  for name in listdir(top):
    (dirnames if isdir(join(top, name)) else filenames).append(name)
  yield top, dirnames, filenames
  for name in dirnames:
    yield from walk(join(top, name))


FileStat = collections.namedtuple(
  "FileStat", ["size", "mtime_ns", "inode", "ctime_ns"], defaults=(None,)
)
FileStat.__doc__ = """A file's size in bytes, mtime in ns (0: unknown), inode and inode change
time in ns (None for URLs). A write that keeps the size and sets the mtime back still changes
the ctime, and a file replaced by a rename has another inode."""


def stat(path):
  """`FileStat` of a file.

  Raises:
    OSError: the file does not exist or cannot be read (FileNotFoundError if missing), as
      `os.stat`, also for URL paths.
    errors.ReadError: a URL whose scheme `tf.io.gfile` does not serve (`url_error`).
  """
  if not is_url(path):
    st = os.stat(path)
    return FileStat(st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
  try:
    st = gfile().stat(path)
  except tf_errors() as e:
    if type(e).__name__ == "UnimplementedError":
      raise url_error(path, e) from e
    cls = FileNotFoundError if type(e).__name__ == "NotFoundError" else OSError
    raise cls(f"{path}: {' '.join(str(getattr(e, 'message', e)).split())}") from e
  return FileStat(int(st.length), int(st.mtime_nsec), None)


def getsize(path):
  """Size of a file in bytes (OSError as `stat`)."""
  return stat(path).size


def open_file(path, mode="rb"):
  """Opens a file for streaming (`open` / `tf.io.gfile.GFile`); use as a context manager.

  A URL file opened for reading that does not exist raises FileNotFoundError, as a local one;
  later read errors of a URL file are TensorFlow OpErrors (`io_errors()` lists both).
  """
  if not is_url(path):
    return builtins.open(path, mode)
  if "r" in mode and not exists(path):
    raise FileNotFoundError(f"{path}: No such file or directory")
  return gfile().GFile(path, mode)


def makedirs(path):
  """Creates `path` and its parents; raises `errors.WriteError`."""
  try:
    if is_url(path):
      gfile().makedirs(path)
    else:
      os.makedirs(path, exist_ok=True)
  except (OSError,) + tf_errors() as e:
    raise errors.write_error(path, e) from e


def remove(path):
  """Removes a file if it exists (no error if it does not)."""
  try:
    if is_url(path):
      if exists(path):
        gfile().remove(path)
    elif os.path.lexists(path):
      os.remove(path)
  except (OSError,) + tf_errors() as e:
    raise errors.write_error(path, e) from e


def parent_dir(path):
  """The parent directory of `path`, or "" (none, or only a URL scheme such as `gs:`)."""
  parent = os.path.dirname(str(path))
  if is_url(path) and "://" not in parent:
    return ""
  return parent


def rmtree(path):
  """Removes a directory tree if it exists (no error if it does not).

  Raises:
    errors.WriteError: an entry cannot be removed.
  """
  try:
    if not is_url(path):
      if os.path.lexists(path):
        shutil.rmtree(path)
    elif _is_ram(path):  # gfile.rmtree trips over the phantom children (module docstring)
      if exists(path):
        for dirpath, dirnames, filenames in reversed(list(walk(path))):
          for name in filenames + dirnames:
            gfile().remove(join(dirpath, name))
        gfile().remove(path)
    elif gfile().exists(path):
      gfile().rmtree(path)
  except io_errors() as e:
    raise errors.write_error(path, e) from e
