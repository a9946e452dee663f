"""The plan of the deployment's images beside a labelled test set (docs/spec.md §8.11).

    audit --dataset=folder:/data/test --deployment_images=folder:/data/frames \
          --reference=model.keras --candidate=int8=model_int8.tflite --out=/tmp/audit

`option` checks `--deployment_images` and gives what the audited data set records
(`tf_forget.data.deployment_view.OPTION`); `check` (a plan step) lists the images and, unless
`--plan`, decodes the first, before anything is written. The images are read without labels
(a folder's class folders are ignored: they are the deployment's images all the same) with the
model's classes, and compared with the reference as an audit without labels compares them
(§8.1–8.7), one reference (K = 1).
"""

from tf_forget.config import tree
from tf_forget.data import dataset_api
from tf_forget.data import deployment_view
from tf_forget.data import sources


def option(data_dir, user, unlabelled):
  """{"name", "options"} of `--deployment_images` (`sources.parse`; `data_dir` for a tfds
  source) for the audited data set's options, or None without it.

  Args:
    data_dir: `--data_dir`, or None.
    user: the `tree.UserModels`.
    unlabelled: whether the audited `--dataset` has no labels.

  Raises:
    AuditError: the audited data has no labels, more than one reference, or a spelling that is
      not the user's own data (one line).
  """
  given = user.deployment_images
  if not given:
    return None
  if unlabelled:
    raise tree.AuditError(
      f"--deployment_images={given} goes beside a labelled --dataset; this --dataset has no "
      "labels, so it already is the audit on your deployment's images (docs/spec.md §8.8): "
      "drop --deployment_images, or give a labelled --dataset"
    )
  if len(user.references) != 1:
    raise tree.AuditError(
      f"--deployment_images compares one model with its files (K = 1, docs/spec.md §8.11); "
      f"--reference gives {len(user.references)}: give one"
    )
  name, options = sources.parse_own("deployment_images", given, data_dir, what="images")
  options[dataset_api.LABELS_OPTION] = dataset_api.LABELS_NONE
  return {"name": name, "options": options}


def check(user, dataset, check_data):
  """Step: the deployment's images can be listed (a folder without an image is refused) and,
  unless `check_data` is False (`--plan`), their first image decoded.

  Raises:
    DataError: images that cannot be listed or read (one line, naming `--deployment_images`).
  """
  if not user.deployment_images:
    return
  try:
    view = deployment_view.DeploymentView(dataset)
    if check_data:
      view.take(deployment_view.SPLIT, 1)
  except dataset_api.DataError as e:
    raise dataset_api.DataError(f"--deployment_images={user.deployment_images}: {e}") from e


def describe(p):
  """The plan's line of the deployment's images ("" without them)."""
  found = deployment_view.recorded(p.dataset)
  if found is None:
    return ""
  where = found["options"].get("path") or found["options"].get("pattern")
  where = where or found["options"].get("tfds_name") or ""
  return (
    f"\n  deployment images: {found['name']}:{where}, without labels: every file is also "
    "compared with your model on them (flips, side by side with the test set)"
  )
