"""What the user's own data sets (`user_sets`) read from the user, checked: lists of names, small
text files (UTF-8, a byte order mark dropped), and TensorFlow errors turned into one-line
`dataset_api.DataError` messages.
"""

import re

import tensorflow as tf

from tf_forget.artifacts import errors
from tf_forget.data import dataset_api


def tf_message(error):
  """The one-line text of a TensorFlow OpError: its `message` without the function / node /
  op names and the tf.data transformation prefix."""
  text = str(getattr(error, "message", None) or error)
  text = re.sub(
    r"\{\{function_node [^}]*\}\}|\[\[\{\{node [^}]*\}\}\]\]|\[Op:\w+\].*$", "", text, flags=re.S
  )
  text = re.sub(r"^.*transformation with iterator: [\w:]+: ", "", text.strip(), flags=re.S)
  return errors.one_line(text, 200)


def decode_text(data, path, what):
  """`data` (bytes of the file `path`) as UTF-8 text, a leading byte order mark dropped.

  Excel's "CSV UTF-8" and Notepad write a BOM (U+FEFF) first; it is not part of the first
  name or column. Any other encoding (Latin-1, UTF-16, ...) is refused rather than guessed.

  Raises:
    dataset_api.DataError: "<what> <path> is not UTF-8 (byte 0xe9 at offset 3, line 1): re-save it
      as UTF-8" (one line).
  """
  try:
    return data.decode("utf-8-sig")
  except UnicodeDecodeError as e:
    line = data.count(b"\n", 0, e.start) + 1
    raise dataset_api.DataError(
      f"{what} {path} is not UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start}, line "
      f"{line}): re-save it as UTF-8"
    ) from None


def read_text(path, what):
  """The UTF-8 text of the file `path` (local or `gs://`; `decode_text`); a DataError naming
  it as `what`."""
  try:
    with tf.io.gfile.GFile(path, "rb") as f:
      data = f.read()
  except (OSError, tf.errors.OpError) as e:
    raise dataset_api.DataError(f"cannot read {what} {path}: {tf_message(e)}") from e
  return decode_text(data, path, what)


def parse_names(values, what):
  """A tuple of distinct non-empty names from a list (or a comma-separated string)."""
  if values is None:
    return None
  if isinstance(values, str):
    values = [v for v in values.split(",") if v.strip()]
  names = tuple(str(v).strip() for v in values)
  if any(not n for n in names):
    raise dataset_api.DataError(f"{what} has an empty name")
  dupes = sorted({n for n in names if names.count(n) > 1})
  if dupes:
    raise dataset_api.DataError(f"{what} names {dupes[0]!r} twice")
  return names
