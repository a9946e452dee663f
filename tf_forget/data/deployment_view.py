"""The images a deployment sees, audited beside a labelled test set (docs/spec.md §8.11).

    audit --dataset=folder:/data/test --deployment_images=folder:/data/frames \
          --reference=model.keras --candidate=int8=model_int8.tflite --out=/tmp/audit

An audit of the user's model on labelled data may name the images its deployment sees
(`--deployment_images=DATA`, spelled like `--dataset`: `folder:PATH`, `tfds:NAME[:SPLIT]`,
`tfrecord:GLOB`). They are recorded in the audited data set's options as `deployment_images` =
{"name", "options"} of `sources.parse` (like `calibration` and `train_data`), and always read
without labels (option `labels` = "none": a folder's images at any depth, class folders
included, docs/spec.md §8.8), at the audited data set's image size, channels, classes and
preprocess (`source`). `tf_forget.pipeline.data_identity` adds "content", the sha256 of its
files.

`DeploymentView` is that data under one split, `SPLIT`: every file is evaluated on it beside the
labelled test split (`predictions/<variant>/<k>/deployment.npz`), and the report reads it as a
run of its own (`tf_forget.report.units.side_by_side`).
"""

import dataclasses

from tf_forget.artifacts import names
from tf_forget.artifacts import predictions
from tf_forget.data import dataset_api
from tf_forget.data import registry

OPTION = "deployment_images"  # the audited data set's option naming the deployment's images
SPLIT = names.DEPLOYMENT_SPLIT  # the split the files are evaluated on (`predictions.path`)


def recorded(dataset):
  """The {"name", "options"} the audited data set records (`OPTION`), or None."""
  return dict(dataset.spec.options).get(OPTION) or None


def source(dataset):
  """The deployment's images of `dataset` (`OPTION`): a data set without labels read at the
  audited data set's image size, channels, classes and preprocess; None without the option.

  Raises:
    dataset_api.DataError: the images cannot be listed (a missing folder, no image: one line).
  """
  found = recorded(dataset)
  if found is None:
    return None
  height, width, channels = dataset.spec.image_shape
  options = dict(
    found["options"],
    image_size=[height, width],
    channels=channels,
    class_names=list(dataset.spec.class_names),
  )
  options[dataset_api.LABELS_OPTION] = dataset_api.LABELS_NONE
  if dataset.spec.options.get("preprocess"):
    options["preprocess"] = dataset.spec.options["preprocess"]
  return registry.get(found["name"], **options)


class DeploymentView(dataset_api.Dataset):
  """The deployment's images (`source`) as the one split `SPLIT`.

  Its spec is the source's, with the split `SPLIT`, and the source's content digest recorded
  for it (`predictions.CONTENT`), so that the predictions' split identity
  (`predictions.split_identity`) changes with the images' bytes.

  Attributes:
    source: the data set without labels.
    split: the source's split read as `SPLIT` (its eval split).
  """

  def __init__(self, dataset):
    """Builds the view of `dataset`'s deployment images (lists them; no image is decoded).

    Raises:
      dataset_api.DataError: no `OPTION` in `dataset`'s options, or images that cannot be listed.
    """
    self.source = source(dataset)
    if self.source is None:
      raise dataset_api.DataError(f"data set {dataset.spec.name!r} names no deployment images")
    self.split = self.source.spec.eval_split
    options = dict(self.source.spec.options)
    content = recorded(dataset).get(predictions.CONTENT)
    options[predictions.CONTENT] = {SPLIT: content} if content else None
    options = {k: v for k, v in options.items() if v is not None}
    super().__init__(
      dataclasses.replace(self.source.spec, splits=(SPLIT,), eval_split=SPLIT, options=options)
    )

  def _of(self, split):
    self.check_split(split)
    return self.split

  def batches(self, split, batch_size):
    return self.source.batches(self._of(split), batch_size)

  def annotation_batches(self, split, batch_size):
    return self.source.annotation_batches(self._of(split), batch_size)

  def num_examples(self, split):
    return self.source.num_examples(self._of(split))

  def examples(self, split, ids):
    return self.source.examples(self._of(split), ids)

  def example_names(self, split):
    """The source's names of its examples (a folder's relative paths)."""
    names = getattr(self.source, "example_names", None)
    if names is None:
      return [str(i) for i in range(self.num_examples(split))]
    return names(self._of(split))

  def model_inputs(self, examples):
    return self.source.model_inputs(examples)


def of(dataset):
  """The `DeploymentView` of `dataset`, or None when it names no deployment images."""
  return None if recorded(dataset) is None else DeploymentView(dataset)


def identity(view):
  """The split identity of the view's predictions (`predictions.split_identity`)."""
  return predictions.split_identity(view.spec.name, view.spec.options, SPLIT)
