"""A user's Keras model file held to a size cap before anything parses it (zip bombs).

A `.keras` file is a zip archive: `config.json` and `metadata.json`, which tf_forget's checks
(`tf_forget.export.model_files.detect`, `tf_forget.train.model_code`) and Keras read whole
and parse, and the weights (`model.weights.h5`), which Keras reads into variables of the
shapes the configuration declares. The size of a member is what the archive's writer recorded
in its central directory; a 2.6 MB archive may record and hold a `config.json` that inflates
to gigabytes, which `json.loads` then multiplies. (An HDF5 model, `.h5`, keeps its
configuration in attributes, which HDF5 stores unpacked: none is larger than the file.)

`check(path)` runs before any of those reads: every JSON member of a zip must record at most
`MAX_JSON_BYTES`, and is read with no more than the size it records inflated (`read_member`),
so a member that inflates beyond what it records is refused too. Each refusal is one
`ArchiveError` line naming the file and the member. A file that is no zip archive passes (its
loader says what is wrong with it). No TensorFlow.
"""

import json
import zipfile
import zlib

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem

MAX_JSON_BYTES = 64_000_000  # a model's configuration: a few kB to a few MB


class ArchiveError(errors.Error):
  """A model file whose configuration is over the size cap, or inflates beyond what its
  archive records (one line, naming the file and the member)."""


def read_member(archive, name, path, limit=None):
  """The bytes of member `name` of the open `zipfile.ZipFile` `archive` of file `path`, at
  most `limit` (None: `MAX_JSON_BYTES`) of them inflated.

  Raises:
    ArchiveError: the member records more than `limit` bytes (refused unread), or inflates to
      more than it records or to other bytes (its checksum).
    KeyError: no such member.
  """
  limit = MAX_JSON_BYTES if limit is None else limit
  info = archive.getinfo(name)
  if info.file_size > limit:
    raise ArchiveError(
      f"model file {path}: its {name} unpacks to "
      f"{fileio.size_text(info.file_size)}, over the "
      f"{fileio.size_text(limit)} a model's configuration may take (refused "
      "unread)"
    )
  try:
    with archive.open(info) as f:  # inflates no more than it records, whatever it holds
      data = f.read(info.file_size + 1)
  except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as e:
    raise ArchiveError(
      f"model file {path}: its {name} does not unpack to the "
      f"{fileio.size_text(info.file_size)} its archive records "
      f"({errors.one_line(e, 120)})"
    ) from e
  if len(data) != info.file_size:
    raise ArchiveError(
      f"model file {path}: its {name} does not unpack to the "
      f"{fileio.size_text(info.file_size)} its archive records"
    )
  return data


def read_json_member(archive, name, path):
  """Member `name` of `archive` (of file `path`) read with the cap and parsed as JSON.

  Raises:
    ArchiveError: as `read_member`.
    KeyError: no such member; ValueError: not JSON (callers make either one line).
  """
  return json.loads(read_member(archive, name, path))


def _check_zip(archive, path):
  for info in archive.infolist():
    if info.filename.lower().endswith(".json"):
      read_member(archive, info.filename, path)


def check(path):
  """Raises `ArchiveError` if the model file `path` (local or `gs://`) is a zip archive holding
  a configuration over the cap (module docstring); a directory (SavedModel) or a file that is
  no zip archive passes."""
  if filesystem.isdir(path):
    return
  with filesystem.open_file(path, "rb") as f:
    if not zipfile.is_zipfile(f):
      return
    f.seek(0)
    try:
      archive = zipfile.ZipFile(f)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
      return  # a damaged archive: its loader says what is wrong
    with archive:
      _check_zip(archive, path)
