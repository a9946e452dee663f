"""Every path of a run directory (docs/artifacts/*.md), in one place.

    <run>/
      .tf_forget.lock who is writing the run (`run_lock.py`) audit.json the audit's config
      (`tf_forget/pipeline/audit_lib.py`) run.json the population config (tf_forget/train)
      members/<member variant>/<k>/{model.keras, metadata.json, checkpoints/}
      members/dense/<k>/saved_model/ an imported SavedModel (`train/imported.py`)
      members/dense/<k>/gradient/<protocol>.npz g of a one-shot parent (`prune/gradient.py`)
      tflite/<member variant>/<k>/<stem>.{tflite, json, failed.json}
      predictions/<variant>/<k>/<split>.npz predictions_keras/<member variant>/<k>/<split>.npz
      noise/<variant>/<k>/linf.npz layers/<member variant>/<k>/full_int8{.json,
      .model_explorer.json} per-layer error eval/agreement/<split>.json eval/encodings.json
      eval/twin_runtime/<variant>/<k>/<split>.<runtime>.npz data/<role>.json the user's data files,
      hashed corruptions/ the corrupted-split cache of the audit report.json, report.html,
      tables/ tf_forget/report deploy/ the deployment bundle logs/ TensorFlow's output
      (`tf_forget/cli`)

`<stem>` is the format, or `<format>+sparse` for a sparse-encoded twin (`names.Variant`);
`<k>` is the member index without padding. `walk(root)` lists the `<root>/<variant>/<k>/`
directories of any of these trees. Standard library only (and `filesystem`, which reads
`scheme://` paths through TensorFlow only when given one).
"""

import os

from tf_forget.artifacts import filesystem
from tf_forget.artifacts import names

RUN_FILE = "run.json"
AUDIT_FILE = "audit.json"
REPORT_FILE = "report.json"
MODEL_FILE = "model.keras"
SAVED_MODEL_DIR = "saved_model"  # an imported SavedModel, as the user saved it
METADATA_FILE = "metadata.json"
CHECKPOINT_DIR = "checkpoints"
NOISE_FILE = "linf.npz"
LOCK_FILE = ".tf_forget.lock"
FINISHED_FILE = ".tf_forget.finished.json"  # what a finished run was made from
BUNDLE_DIR = "deploy"
MANIFEST_FILE = "manifest.json"  # the bundle's completion marker, written last
# What the report's writer swaps in, report.json (the completion marker) last, and its staging
# label (`tf_forget.report.write`).
REPORT_ENTRIES = ("tables", "report.html", REPORT_FILE)
REPORT_STAGING = ".report"
# Every top-level entry tf_forget writes in a run directory (the tree above); `.tf_forget.*`
# records and the swaps' `<entry>.tmp-*` / `<entry>.old-*` / `.report.*` names are its own too.
RUN_ENTRIES = (
  LOCK_FILE,
  AUDIT_FILE,
  RUN_FILE,
  "members",
  "tflite",
  "predictions",
  "predictions_keras",
  "noise",
  "layers",
  "eval",
  "data",
  "corruptions",
  *REPORT_ENTRIES,
  "deploy",
  "logs",
)
_OWN_PREFIXES = (".tf_forget.", ".report.")  # records, the report's staging (`report.write`)
_SWAP_SUFFIXES = (".tmp-", ".old-")  # a swap's staging and aside names (`swap`)


def own_entry(run_dir, path):
  """The entry of `run_dir` that tf_forget writes and `path` is or lies under ("deploy",
  "tables", "audit.json", ...; "." for the run directory itself), or None when no artifact of
  the run is there. Local paths, compared as given (both absolute, or both relative)."""
  run_dir, path = os.path.normpath(run_dir), os.path.normpath(path)
  if path == run_dir:
    return "."
  inside = os.path.relpath(path, run_dir)
  if inside == os.pardir or inside.startswith(os.pardir + os.sep):
    return None
  name = inside.split(os.sep, 1)[0]
  base = name
  for suffix in _SWAP_SUFFIXES:
    base = base.split(suffix, 1)[0]
  return name if base in RUN_ENTRIES or name.startswith(_OWN_PREFIXES) else None


def _check_split(split):
  names.parse_split(split)  # raises SplitNameError for "", "a/b", "x@y"
  return split


def run_file(run_dir):
  return os.path.join(run_dir, RUN_FILE)


def lock_file(run_dir):
  return os.path.join(run_dir, LOCK_FILE)


def finished_file(run_dir):
  return os.path.join(run_dir, FINISHED_FILE)


def audit_file(run_dir):
  return os.path.join(run_dir, AUDIT_FILE)


def report_file(run_dir):
  return os.path.join(run_dir, REPORT_FILE)


def members_root(run_dir):
  return os.path.join(run_dir, "members")


def member_dir(run_dir, member_variant, k):
  """`<run>/members/<member variant>/<k>`."""
  return os.path.join(run_dir, "members", member_variant, str(int(k)))


def member_model(run_dir, member_variant, k):
  """The member's model: `model.keras`, or the `saved_model/` directory of a member imported
  from a SavedModel (`tf_forget.train.imported`) when that directory exists."""
  directory = member_dir(run_dir, member_variant, k)
  saved = os.path.join(directory, SAVED_MODEL_DIR)
  return saved if filesystem.isdir(saved) else os.path.join(directory, MODEL_FILE)


def member_metadata(run_dir, member_variant, k):
  return os.path.join(member_dir(run_dir, member_variant, k), METADATA_FILE)


def gradient_file(run_dir, parent_variant, k, protocol_sha256):
  """`<run>/members/<parent>/<k>/gradient/<first 16 hex of the protocol's sha256>.npz`.

  g, the mean data-loss gradient of a one-shot parent that every GP and UP member of that
  parent reads (docs/spec.md §6.2).
  """
  return os.path.join(
    member_dir(run_dir, parent_variant, k), "gradient", f"{protocol_sha256[:16]}.npz"
  )


def member_model_relpath(member_variant, k, saved_model=False):
  """`members/<member variant>/<k>/model.keras` (relative to the run, as exports record it;
  `saved_model`: its `saved_model` directory, `member_model`)."""
  return os.path.join(
    "members", member_variant, str(int(k)), SAVED_MODEL_DIR if saved_model else MODEL_FILE
  )


def tflite_root(run_dir):
  return os.path.join(run_dir, "tflite")


def _tflite_base(run_dir, variant, k):
  return os.path.join(run_dir, "tflite", variant.member_variant, str(int(k)), variant.file_stem)


def tflite_paths(run_dir, variant, k):
  """(`.tflite` path, `.json` path) of a `names.Variant`'s export of member k."""
  base = _tflite_base(run_dir, variant, k)
  return base + ".tflite", base + ".json"


def tflite_failure(run_dir, variant, k):
  """`<stem>.failed.json`: a failed (sparse) conversion of a variant's export of member k."""
  return _tflite_base(run_dir, variant, k) + ".failed.json"


def predictions_root(run_dir):
  return os.path.join(run_dir, "predictions")


def predictions(run_dir, variant, k, split):
  """`<run>/predictions/<variant>/<k>/<split>.npz`."""
  return os.path.join(run_dir, "predictions", variant, str(int(k)), f"{_check_split(split)}.npz")


def keras_predictions(run_dir, member_variant, k, split):
  """`<run>/predictions_keras/<member variant>/<k>/<split>.npz`."""
  return os.path.join(
    run_dir, "predictions_keras", member_variant, str(int(k)), f"{_check_split(split)}.npz"
  )


def noise_root(run_dir):
  """`<run>/noise`."""
  return os.path.join(run_dir, "noise")


def noise(run_dir, variant, k):
  """`<run>/noise/<variant>/<k>/linf.npz`."""
  return os.path.join(noise_root(run_dir), variant, str(int(k)), NOISE_FILE)


def layers(run_dir, member_variant, k, file_format="full_int8"):
  """`<run>/layers/<member variant>/<k>/<format>.json`: where the member's `file_format` file
  departs from its float32 file on its forgotten and stable examples
  (`tf_forget.evaluate.layer_analysis`): per layer for `full_int8`, tensor by tensor for
  a user's file."""
  return os.path.join(run_dir, "layers", member_variant, str(int(k)), f"{file_format}.json")


def model_explorer(run_dir, member_variant, k, file_format="full_int8"):
  """`<run>/layers/<member variant>/<k>/<format>.model_explorer.json` (node data)."""
  return os.path.join(
    run_dir, "layers", member_variant, str(int(k)), f"{file_format}.model_explorer.json"
  )


def walk(root):
  """Yields (variant, k, directory) of every `<root>/<variant>/<k>/` directory.

  `root` is one of the per-member trees (`members_root`, `tflite_root`, `predictions_root`,
  `noise_root`, ...). Variants come in name order, k ascending; entries that are not
  directories, and `<k>` that are not digits (a writer's temporary names), are skipped. A root
  that does not exist yields nothing.
  """
  if not filesystem.isdir(root):
    return
  for variant in filesystem.listdir(root):
    vdir = os.path.join(root, variant)
    if not filesystem.isdir(vdir):
      continue
    for k in sorted((d for d in filesystem.listdir(vdir) if d.isdigit()), key=int):
      kdir = os.path.join(vdir, k)
      if filesystem.isdir(kdir):
        yield variant, int(k), kdir


def agreement(run_dir, split):
  """`<run>/eval/agreement/<split>.json`."""
  return os.path.join(run_dir, "eval", "agreement", f"{_check_split(split)}.json")


def encodings(run_dir):
  """`<run>/eval/encodings.json`."""
  return os.path.join(run_dir, "eval", "encodings.json")


def twin_runtime(run_dir, variant, k, split, runtime):
  """`<run>/eval/twin_runtime/<variant>/<k>/<split>.<runtime>.npz`."""
  return os.path.join(
    run_dir, "eval", "twin_runtime", variant, str(int(k)), f"{_check_split(split)}.{runtime}.npz"
  )


DATA_ROLES = ("test", "train", "calibration", "train_data", "deployment_images")


def data_fingerprint(run_dir, role):
  """`<run>/data/<role>.json`: the files of the user's data a run read, hashed
  (`tf_forget/pipeline/data_identity.py`); role is a split of the audited data set, "calibration",
  "train_data" or "deployment_images"."""
  if role not in DATA_ROLES:
    raise ValueError(f"unknown data role {role!r} (roles: {', '.join(DATA_ROLES)})")
  return os.path.join(run_dir, "data", f"{role}.json")


def corruptions_dir(run_dir):
  return os.path.join(run_dir, "corruptions")


def deploy_dir(run_dir):
  return os.path.join(run_dir, BUNDLE_DIR)
