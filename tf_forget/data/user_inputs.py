"""What the user's own data sets (`user_sets`) read from the user, checked: lists of names, small
text files, and TensorFlow errors turned into one-line `base.DataError` messages.
"""

import re

import tensorflow as tf

from tf_forget.artifacts import errors
from tf_forget.data import base


def tf_message(error):
  """The one-line text of a TensorFlow OpError: its `message` without the function / node /
  op names and the tf.data transformation prefix."""
  text = str(getattr(error, "message", None) or error)
  text = re.sub(r"\{\{function_node [^}]*\}\}|\[\[\{\{node [^}]*\}\}\]\]|\[Op:\w+\].*$",
                "", text, flags=re.S)
  text = re.sub(r"^.*transformation with iterator: [\w:]+: ", "", text.strip(), flags=re.S)
  return errors.one_line(text, 200)


def read_text(path, what):
  """The text of the file `path` (local or `gs://`); a DataError naming it as `what`."""
  try:
    with tf.io.gfile.GFile(path, "r") as f:
      return f.read()
  except (OSError, tf.errors.OpError) as e:
    raise base.DataError(f"cannot read {what} {path}: {tf_message(e)}") from e


def parse_names(values, what):
  """A tuple of distinct non-empty names from a list (or a comma-separated string)."""
  if values is None:
    return None
  if isinstance(values, str):
    values = [v for v in values.split(",") if v.strip()]
  names = tuple(str(v).strip() for v in values)
  if any(not n for n in names):
    raise base.DataError(f"{what} has an empty name")
  dupes = sorted({n for n in names if names.count(n) > 1})
  if dupes:
    raise base.DataError(f"{what} names {dupes[0]!r} twice")
  return names
