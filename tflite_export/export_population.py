r"""Exports every member of a population run to TFLite (docs/artifacts/tflite.md).

    bazel run //tflite_export:export_population -- --run_dir=/path/to/run \
        --formats=float32,float16,dynamic_int8,full_int8 --pruned_formats=float32 \
        --encodings=plain,sparse

Dense members get `--formats`; pruned members get `--pruned_formats` (SPEC §1.1: post-training
formats apply to dense members unless a combination such as `prune_0.9+full_int8` is asked for).
Unset, both come from the protocol of the run's data set (`run.json`'s or the members' `dataset`;
`tf_forget.data.protocols`): float32 plus its post-training formats for dense members (SPEC §2.3:
CelebA dynamic_int8 and full_int8, the others also float16), float32 only for pruned members.
`--encodings=plain,sparse` adds a sparse-encoded twin of every file (issue #10); a sparse
conversion that fails is reported on one line and recorded, the plain file stays, and the exit
status is still 0. Finished exports are skipped on re-run. Bad input is a one-line error and
exit status 1.
"""

import os

from absl import app
from absl import flags
from absl import logging

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import layout
from tf_forget.artifacts import names
from tf_forget.cli import app as cli_app
from tf_forget.cli import console
from tf_forget.compat import cpu_kernels
from tf_forget.compat import keras2
from tf_forget.data.protocols import protocol_registry as protocols

_RUN_DIR = flags.DEFINE_string("run_dir", None, "Population run directory (with members/).")
_FORMATS = flags.DEFINE_string("formats", None,
                               "Comma-separated TFLite formats for the dense members (default: "
                               "float32 and the data set protocol's, SPEC §2.3).")
_PRUNED_FORMATS = flags.DEFINE_string("pruned_formats", None,
                                      "Comma-separated TFLite formats for pruned members "
                                      "(default: the protocol's: float32, SPEC §1.1).")
_REPRESENTATIVE_SIZE = flags.DEFINE_integer(
    "representative_size", 100, "First N train examples used to calibrate full_int8 "
    "(SPEC §2.5; 000 appendix A).", lower_bound=1)
_ENCODINGS = flags.DEFINE_string("encodings", "plain",
                                 "Comma-separated weight encodings: plain, sparse (issue #10).")
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "Re-export finished exports.")


def members_dataset(run_dir):
  """The data set of a run: `run.json`'s, else the one every member's metadata names.

  Raises:
    errors.ReadError: unreadable `run.json` or metadata, no member, or members of several data
      sets.
  """
  path = layout.run_file(run_dir)
  if fileio.exists(path):
    run = fileio.read_json(path, "run config")
    return run.get("dataset") if isinstance(run, dict) else None
  found = set()
  for _, _, kdir in layout.walk(layout.members_root(run_dir)):
    meta_path = os.path.join(kdir, layout.METADATA_FILE)
    if fileio.exists(meta_path):
      meta = fileio.read_json(meta_path, "member metadata")
      found.add(meta.get("dataset") if isinstance(meta, dict) else None)
  if len(found) != 1:
    what = "no member" if not found else f"members of several data sets {sorted(map(str, found))}"
    raise errors.ReadError(f"{run_dir} has no run.json and {what}")
  return found.pop()


def protocol_formats(run_dir):
  """(dense, pruned) comma-separated formats of the protocol of the run's data set.

  Raises:
    errors.ReadError: see `members_dataset`; protocols.ProtocolError: no protocol.
  """
  protocol = protocols.get(members_dataset(run_dir))
  return (",".join(("float32",) + protocol.quantizations),
          ",".join(("float32",) + protocol.pruned_quantizations))


def main(argv):
  del argv  # stray arguments are refused by `cli_app.run`
  keras2.enable()
  cpu_kernels.configure()
  logging.set_verbosity(logging.WARNING)  # the converter logs every SavedModel it writes
  if not _RUN_DIR.value:
    raise app.UsageError("--run_dir is required")
  run_dir = filesystem.user_path(_RUN_DIR.value)
  if not fileio.isdir(run_dir):
    raise app.UsageError(f"--run_dir {run_dir} is not a directory")
  dense, pruned = _FORMATS.value, _PRUNED_FORMATS.value
  if dense is None or pruned is None:
    try:
      default_dense, default_pruned = protocol_formats(run_dir)
    except (errors.Error, protocols.ProtocolError) as e:
      console.error(f"export_population: error: {errors.one_line(e, 1000)} (or give --formats "
                    "and --pruned_formats)")
      return 1
    dense = default_dense if dense is None else dense
    pruned = default_pruned if pruned is None else pruned
  try:
    dense = names.parse_formats(dense)
    pruned = names.parse_formats(pruned)
    encodings = names.parse_encodings(_ENCODINGS.value)
  except names.FormatError as e:
    raise app.UsageError(str(e))
  # pylint: disable=g-import-not-at-top  (TensorFlow only after Keras 2 is selected)
  from tf_forget.export import export
  # pylint: enable=g-import-not-at-top
  try:
    with cli_app.locked_run_dir(run_dir, "export_population", check_ours=False):
      export.export_population(run_dir, dense, pruned, _REPRESENTATIVE_SIZE.value,
                               overwrite=_OVERWRITE.value, log=print, encodings=encodings)
  except errors.Error as e:  # bad input or artifact: one line (a bug keeps its traceback)
    console.error(f"export_population: error: {errors.one_line(e, 1000)}")
    return 1
  return 0


# --help, section by section (every flag of this file and --verbose under one title).
HELP_SECTIONS = (
    ("what to read and write", ["run_dir", "overwrite", "verbose"]),
    ("what to make", ["formats", "pruned_formats", "encodings", "representative_size"]),
)


def _help():
  """`--help`: `HELP_SECTIONS` with each flag's help and default (`cli_app.sectioned_help`).

  Raises:
    AssertionError: a flag of this file or --verbose in no section (a bug here, said loudly).
  """
  return cli_app.sectioned_help(__doc__, HELP_SECTIONS, flags.FLAGS, __name__)


if __name__ == "__main__":
  cli_app.run(main, "export_population", _help)
