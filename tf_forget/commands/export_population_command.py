"""The `export_population` command: its flags and its body (`tflite_export/export_population.py`
is the thin binary; tests run `run` in-process without importing a binary).

`define(flag_values)` defines the flags on an absl `FlagValues`; `run(flag_values)` exports every
member of a population run (`tf_forget.export.export`), the formats defaulting to the protocol's
(`tf_forget.export.default_formats`); `HELP_SECTIONS` orders `--help`.
"""

from absl import app
from absl import flags
from absl import logging

from tf_forget.artifacts import errors
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import names
from tf_forget.cli import app as cli_app
from tf_forget.cli import console
from tf_forget.compat import cpu_kernels
from tf_forget.compat import keras2
from tf_forget.data.protocols import protocol_registry as protocols
from tf_forget.export import default_formats

NAME = "export_population"

# --help, section by section (every flag of `define` and --verbose under one title).
HELP_SECTIONS = (
  ("what to read and write", ["run_dir", "overwrite", "verbose"]),
  ("what to make", ["formats", "pruned_formats", "encodings", "representative_size"]),
)


def define(flag_values):
  """Defines the command's flags on `flag_values` (an absl `FlagValues`)."""
  fv = {"flag_values": flag_values}
  flags.DEFINE_string("run_dir", None, "Population run directory (with members/).", **fv)
  flags.DEFINE_string(
    "formats",
    None,
    "Comma-separated TFLite formats for the dense members "
    "(default: float32 and the data set protocol's, docs/spec.md §2.3).",
    **fv,
  )
  flags.DEFINE_string(
    "pruned_formats",
    None,
    "Comma-separated TFLite formats for pruned "
    "members (default: the protocol's: float32, docs/spec.md §1.1).",
    **fv,
  )
  flags.DEFINE_integer(
    "representative_size",
    100,
    "First N train examples used to calibrate full_int8 (docs/spec.md §2.5; 000 appendix A).",
    lower_bound=1,
    **fv,
  )
  flags.DEFINE_string(
    "encodings", "plain", "Comma-separated weight encodings: plain, sparse.", **fv
  )
  flags.DEFINE_bool("overwrite", False, "Re-export finished exports.", **fv)


def run(fv):
  """The command over the parsed flags `fv`; returns the exit status (0, or 1 on bad input).

  Raises:
    app.UsageError: a missing or bad --run_dir, a bad format or encoding (one line).
  """
  keras2.enable()
  cpu_kernels.configure()
  logging.set_verbosity(logging.WARNING)  # the converter logs every SavedModel it writes
  if not fv.run_dir:
    raise app.UsageError("--run_dir is required")
  run_dir = filesystem.user_path(fv.run_dir)
  if not filesystem.isdir(run_dir):
    raise app.UsageError(f"--run_dir {run_dir} is not a directory")
  dense, pruned = fv.formats, fv.pruned_formats
  if dense is None or pruned is None:
    try:
      default_dense, default_pruned = default_formats.protocol_formats(run_dir)
    except (errors.Error, protocols.ProtocolError) as e:
      console.error(
        f"{NAME}: error: {errors.one_line(e, 1000)} (or give --formats and --pruned_formats)"
      )
      return 1
    dense = default_dense if dense is None else dense
    pruned = default_pruned if pruned is None else pruned
  try:
    dense = names.parse_formats(dense)
    pruned = names.parse_formats(pruned)
    encodings = names.parse_encodings(fv.encodings)
  except names.FormatError as e:
    raise app.UsageError(str(e))
  from tf_forget.export import export  # after Keras 2

  try:
    with cli_app.locked_run_dir(run_dir, NAME, check_ours=False):
      export.export_population(
        run_dir,
        dense,
        pruned,
        fv.representative_size,
        overwrite=fv.overwrite,
        log=print,
        encodings=encodings,
      )
  except errors.Error as e:  # bad input or artifact: one line (a bug keeps its traceback)
    console.error(f"{NAME}: error: {errors.one_line(e, 1000)}")
    return 1
  return 0
