"""An audit of the user's model on data without labels: how the plan reads that data.

    audit --dataset=folder:/deployment/images --labels=none --reference=model.keras \
          --candidate=int8=model_int8.tflite --compress=float16 --out=/tmp/audit

The data has no labels when `--labels=none` says so (over a `folder:`, `tfds:` or `tfrecord:`
source), or when a folder is laid out without them: images at its root and no subfolder of
images (`tf_forget.data.image_folders.layout`; docs/spec.md §8.8). Its classes are then the
model's: `--class_names` if given, else the output indices "0", "1", ... A full int8 file
tf_forget makes is calibrated on the same images unless `--calibration` names other data (no
label is read). One reference is compared with its files (K = 1). What needs labels is refused
in one line before anything is written: `--attributes` / `--protected` (subgroup error rates)
and `--repair` (it repairs what a file forgot of the labels). The gates that need labels, and
the gates without labels given with labels, are refused by `tf_forget.policy.unlabelled_gates`
(`gate_plan`).
"""

from tf_forget.config import tree
from tf_forget.data import dataset_api
from tf_forget.data import image_folders
from tf_forget.data import sources


def labels(name, options, user):
  """`dataset_api.LABELS_NONE` when the audited data has no labels, else None.

  Args:
    name, options: the `sources.parse`d `--dataset`.
    user: the `tree.UserModels` (`labels`: "none" or None).

  Raises:
    AuditError: `--labels=none` over a registered data set (it has labels of its own).
  """
  if user.labels is not None:
    dataset_api.check_labels_option(user.labels)
    if name not in sources.PREFIXES:
      raise tree.AuditError(
        f"--labels=none reads your own data without its labels (folder:, tfds:, tfrecord:); "
        f"{name!r} is a registered data set with labels"
      )
    return dataset_api.LABELS_NONE
  if name == "folder":
    return image_folders.layout(options["path"])
  return None


def dataset_options(name, options, user, repair, classes):
  """The options of data without labels: `labels`, the class names (`--class_names`, else the
  model's output indices) and, for a full int8 file made here without `--calibration`, the same
  images as its calibration data ({"name", "options"}, as `user_plan._calibration`).

  Args:
    name, options: the `sources.parse`d `--dataset` (its data_dir included).
    user: the `tree.UserModels`.
    repair: the `tree.Repair` section.
    classes: the number of the model's outputs.

  Returns:
    dict of options to add.

  Raises:
    AuditError: more than one reference, or a flag that needs labels (`--attributes`,
      `--protected`, `--repair`).
  """
  if len(user.references) != 1:
    raise tree.AuditError(
      f"--reference: {len(user.references)} models; an audit without labels compares one "
      "model with its files (K = 1, docs/spec.md §8.1): give one"
    )
  for flag, given in (
    ("--attributes", user.attributes),
    ("--protected", user.protected),
    ("--repair", repair.repairs),
  ):
    if given:
      raise tree.AuditError(
        f"{flag} needs labelled data, and --dataset={_spelling(name, options)} has no labels "
        "(docs/spec.md §8.8): drop it, or give labelled data"
      )
  names = list(user.class_names) if user.class_names else [str(c) for c in range(classes)]
  out = {dataset_api.LABELS_OPTION: dataset_api.LABELS_NONE, "class_names": names}
  if "full_int8" in user.compress and not user.calibration:
    same = dict(options, **out)
    out["calibration"] = {"name": name, "options": {k: v for k, v in same.items() if v is not None}}
  return out


def calibration_options(name, options, user, classes):
  """The options that read `--calibration` data without labels (a folder laid out without them,
  `image_folders.layout`, or `--labels=none`): `labels` and the model's class names, which no
  calibration reads; {} for labelled data."""
  if name != "folder" or image_folders.layout(options["path"]) is None:
    return {}
  names = list(user.class_names) if user.class_names else [str(c) for c in range(classes)]
  return {dataset_api.LABELS_OPTION: dataset_api.LABELS_NONE, "class_names": names}


def _spelling(name, options):
  """How the message names the data: the folder's path, the tfds name or the TFRecord glob."""
  where = options.get("path") or options.get("tfds_name") or options.get("pattern") or ""
  return f"{name}:{where}"
