"""Atomic artifact writes: see `tf_forget.artifacts.fileio` (moved there, issue #14).

Kept as an alias so that `from tf_forget.io import atomic` keeps working; it no longer
imports TensorFlow (local paths go through `os`, URL paths through a lazy `tf.io.gfile`).
"""

from tf_forget.artifacts.fileio import read_bytes  # pylint: disable=unused-import
from tf_forget.artifacts.fileio import read_json  # pylint: disable=unused-import
from tf_forget.artifacts.fileio import read_npz  # pylint: disable=unused-import
from tf_forget.artifacts.fileio import write_bytes  # pylint: disable=unused-import
from tf_forget.artifacts.fileio import write_json  # pylint: disable=unused-import
from tf_forget.artifacts.fileio import write_npz  # pylint: disable=unused-import
