"""Loads a run's predictions into memory, aligned on example ids (docs/artifacts/predictions.md).

    <run>/predictions/<variant>/<k>/<split>.npz  ->  Run.predictions[variant][split]

Every member of a variant on a split must cover the same example ids; every variant on a split
must cover the same ids as `dense` (rows are reordered to dense's order if only the order
differs); the labels must agree. Attributes (and, on request, images) of the evaluation split
come from the data registry (docs/artifacts/data.md), looked up by example id; the training
split's attribute shares feed 004 Figure 2 (docs/spec.md §4.4).

Sparse-encoded twins (`<variant>+sparse` or `float32+sparse`, docs/spec.md §1.1) are not
report
variants: `tf_forget.evaluate.population_eval` checks that their predictions equal their plain
twin's (the agreement table), and `report.deployment` shows their sizes and latencies.

`load_run(..., variants=, splits=)` loads only the variants and splits a config asks for (the
audit passes its own), so files another config left in the run directory never enter a report.
`Run.caveats` are the sentences the run's audit recorded in `audit.json` (`caveats`: what a
check before the audit found without refusing, `tf_forget.pipeline.run_identity`).

Member pairing: `Run.pairing[variant]` says which dense member each member of a compressed
variant is compared with in paired measures — one-shot members with the dense parent their
`metadata.json` links to (checked current), others by index k; `tf_forget.report.pairing`
makes it and applies it to two populations (`pairing.comparison`, `pairing.paired`).

Numpy only for the predictions (`tf_forget.artifacts.predictions.read`); the data registry is
imported where a data set is built.
"""

import dataclasses
import os
from typing import Dict, Mapping, Tuple

import numpy as np

from tf_forget.artifacts import audit_json
from tf_forget.artifacts import errors
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import layout
from tf_forget.artifacts import names
from tf_forget.artifacts import predictions as predictions_lib
from tf_forget.data import dataset_api
from tf_forget.report import pairing as pairing_lib

SPARSE_SUFFIX = "+" + names.SPARSE


class CollectError(errors.Error):
  """A run's predictions that are missing, misaligned or inconsistent (one line)."""


@dataclasses.dataclass(frozen=True)
class SplitPredictions:
  """One variant's population on one split.

  Attributes:
    members: int `[members]` member indices k (sorted).
    ids: int64 `[N]` example ids (dense's order).
    labels: int64 `[N]` true labels.
    topk: int32 `[members, N, k]` labels by decreasing score; `topk[:, :, 0]` is the top-1.
    metadata: one metadata dict per member (the npz `metadata`).
  """

  members: np.ndarray
  ids: np.ndarray
  labels: np.ndarray
  topk: np.ndarray
  metadata: Tuple[dict, ...]

  @property
  def top1(self):
    """int `[members, N]` top-1 labels."""
    return self.topk[:, :, 0]

  def select(self, members):
    """The rows of the given member indices (a subset of `self.members`, in that order)."""
    pos = {int(k): i for i, k in enumerate(self.members)}
    rows = [pos[int(k)] for k in members]
    return SplitPredictions(
      np.asarray(members, np.int64),
      self.ids,
      self.labels,
      self.topk[rows],
      tuple(self.metadata[i] for i in rows),
    )


@dataclasses.dataclass
class Run:
  """A run's predictions plus the facts of its data set.

  Attributes:
    run_dir: the run directory.
    dataset_name, dataset_options: registry name and options.
    num_classes: C.
    class_names: one name per class (may be empty).
    eval_split: the split the audit reports on (the data set's `eval_split`).
    protected_attributes: attribute names the subgroup audit crosses (004 §2).
    predictions: variant -> split -> `SplitPredictions`.
    attributes: name -> bool `[N]` of the evaluation split, aligned on dense's ids.
    train_attribute_shares: name -> share of the training split (004 Figure 2 x-axis).
    dataset: the `dataset_api.Dataset` (for `images_for`), or None.
    pairing: compressed variant -> {"kind": "parent" | "index", "label": a `pairing.LABELS`
      value, "pairs": [(k_dense, k_variant), ...] sorted by k_variant, "notes": [one line per
      reason members were left out]} (`pairing.pair_members`); `pairing_of` falls back to
      index pairing for a variant it lacks (a `Run` built by hand).
    caveats: the sentences of the run's `audit.json` `caveats` (() without one).
  """

  run_dir: str
  dataset_name: str
  dataset_options: Mapping[str, object]
  num_classes: int
  class_names: Tuple[str, ...]
  eval_split: str
  protected_attributes: Tuple[str, ...]
  predictions: Dict[str, Dict[str, SplitPredictions]]
  attributes: Dict[str, np.ndarray]
  train_attribute_shares: Dict[str, float]
  dataset: object = None
  pairing: Dict[str, dict] = dataclasses.field(default_factory=dict)
  caveats: Tuple[str, ...] = ()

  def pairing_of(self, variant):
    """`pairing[variant]`, or index pairing over the members both populations have."""
    if variant in self.pairing:
      return self.pairing[variant]
    dense = self.predictions.get(names.DENSE, {})
    dense = {self.eval_split: dense[self.eval_split]} if self.eval_split in dense else dense
    return pairing_lib.index_pairing(
      variant, _members(self.predictions.get(variant, {})), _members(dense)
    )

  @property
  def variants(self):
    """Variant names, `dense` first, then sorted."""
    return [names.DENSE] + sorted(v for v in self.predictions if v != names.DENSE)

  @property
  def eval(self):
    """variant -> `SplitPredictions` on the evaluation split."""
    return {
      v: self.predictions[v][self.eval_split]
      for v in self.variants
      if self.eval_split in self.predictions[v]
    }

  def corrupted_splits(self):
    """Sorted list of (split, corruption, severity) of the corrupted splits present."""
    out = set()
    for splits in self.predictions.values():
      for split in splits:
        parsed = parse_split(split)
        if parsed:
          out.add((split,) + parsed)
    return sorted(out, key=lambda s: (s[1], s[2]))


def parse_split(split):
  """(corruption, severity) of a corrupted split name, or None for a plain split."""
  try:
    return names.parse_split(split)
  except names.SplitNameError:
    return None


def _members(splits):
  """Sorted member indices present on any split of one variant ({split: SplitPredictions})."""
  return sorted({int(k) for pop in splits.values() for k in pop.members})


def _scan(run_dir, variants=None, splits=None):
  """{variant: {split: {k: path}}} of the predictions files under `<run>/predictions`.

  Only `variants` and `splits` if given (None: every file on disk but the deployment's images,
  `names.DEPLOYMENT_SPLIT`, a data set of their own: `tf_forget.data.deployment_view`).
  """
  root = layout.predictions_root(run_dir)
  if not filesystem.isdir(root):
    raise CollectError(f"no predictions directory {root}")
  files = {}
  for variant, k, kdir in layout.walk(root):
    if variant.endswith(SPARSE_SUFFIX) or (variants is not None and variant not in variants):
      continue
    for name in filesystem.listdir(kdir):
      split = name[:-4]
      if name.endswith(".npz") and (
        split in splits if splits is not None else split != names.DEPLOYMENT_SPLIT
      ):
        files.setdefault(variant, {}).setdefault(name[:-4], {})[k] = os.path.join(kdir, name)
  if names.DENSE not in files:
    raise CollectError(f"no '{names.DENSE}' predictions under {root} (the baseline population)")
  return files


def _population(variant, split, paths):
  """Stacks the members' files of one (variant, split); all must share ids and labels."""
  members = sorted(paths)
  ids = labels = None
  topks, metas = [], []
  for k in members:
    try:
      data = predictions_lib.read(paths[k])
    except predictions_lib.PredictionsError as e:
      raise CollectError(str(e)) from e
    if ids is None:
      ids, labels = data["ids"].astype(np.int64), data["labels"].astype(np.int64)
    elif not np.array_equal(data["ids"], ids):
      raise CollectError(
        f"{variant}/{k}/{split}: example ids differ from member {members[0]}'s ({paths[k]})"
      )
    elif not np.array_equal(data["labels"], labels):
      raise CollectError(f"{variant}/{k}/{split}: labels differ from member {members[0]}'s")
    if topks and data["topk"].shape[1] != topks[0].shape[1]:
      raise CollectError(
        f"{variant}/{k}/{split}: top-k width {data['topk'].shape[1]} != {topks[0].shape[1]}"
      )
    topks.append(data["topk"].astype(np.int32))
    metas.append(data["metadata"])
  if len(np.unique(ids)) != len(ids):
    raise CollectError(f"{variant}/{split}: duplicate example ids")
  return SplitPredictions(np.asarray(members, np.int64), ids, labels, np.stack(topks), tuple(metas))


def row_order(ids, ref_ids, where):
  """Rows of `ids` in the order of `ref_ids` (None when already in that order).

  Raises:
    CollectError: the two do not hold the same ids.
  """
  ids, ref_ids = np.asarray(ids), np.asarray(ref_ids)
  if np.array_equal(ids, ref_ids):
    return None
  if ids.shape != ref_ids.shape or not np.array_equal(np.sort(ids), np.sort(ref_ids)):
    raise CollectError(
      f"{where}: example ids differ from the dense population's "
      f"({ids.size} vs {ref_ids.size} examples)"
    )
  return np.argsort(ids)[np.searchsorted(np.sort(ids), ref_ids)]


def _align(pop, ref, where):
  """`pop` reordered to `ref`'s ids; raises unless both cover the same ids with equal labels."""
  order = row_order(pop.ids, ref.ids, where)
  labels = pop.labels if order is None else pop.labels[order]
  if not np.array_equal(labels, ref.labels):
    raise CollectError(f"{where}: true labels differ from the dense population's")
  topk = pop.topk if order is None else pop.topk[:, order]
  return SplitPredictions(pop.members, ref.ids, ref.labels, topk, pop.metadata)


def _index_of(data_ids, ids, where):
  """Positions of `ids` in `data_ids`; raises naming the first id the data set lacks."""
  pos = {int(i): n for n, i in enumerate(data_ids)}
  missing = [int(i) for i in ids if int(i) not in pos]
  if missing:
    raise CollectError(
      f"{where}: {len(missing)} example ids not in the data set (first: {missing[0]})"
    )
  return np.asarray([pos[int(i)] for i in ids], np.int64)


def _stream_attributes(dataset, split, names):
  """(ids `[N]`, {name: bool `[N]`}) of a split, read without images (bounded memory).

  `annotation_batches` never decodes an image (tfds sets leave them encoded, in-memory sets
  slice their arrays); data sets without it are read through `batches`.
  """
  ids, attrs = [], {n: [] for n in names}
  stream = getattr(dataset, "annotation_batches", None)
  batches = stream(split, 4096) if stream is not None else dataset.batches(split, 4096)
  for batch in batches:
    ids.append(np.asarray(batch.ids, np.int64))
    for n in names:
      attrs[n].append(np.asarray(batch.attributes[n], bool))
  return (
    np.concatenate(ids) if ids else np.zeros(0, np.int64),
    {n: np.concatenate(v) if v else np.zeros(0, bool) for n, v in attrs.items()},
  )


def load_run(
  run_dir,
  dataset=None,
  dataset_name=None,
  dataset_options=None,
  train_attribute_shares=None,
  variants=None,
  splits=None,
):
  """Loads every predictions file of a run (docs/artifacts/predictions.md).

  Args:
    run_dir: the run directory (holding `predictions/`).
    dataset: a `dataset_api.Dataset` to take attributes / class names from; default: built from the
      registry with `dataset_name` (default: the `dataset` recorded in the dense metadata) and
      `dataset_options` (default: the metadata's `dataset_options`, if any).
    dataset_name, dataset_options: see `dataset`.
    train_attribute_shares: optional {attribute: training share}; default: computed by
      streaming the data set's train split (attributes only).
    variants, splits: load only these variant names and split names (None: all on disk).

  Returns:
    A `Run`.

  Raises:
    CollectError: no predictions, no dense population, unreadable files, members or variants
      whose ids / labels differ, no evaluation split, ids absent from the data set.
  """
  files = _scan(
    run_dir, None if variants is None else set(variants), None if splits is None else set(splits)
  )
  raw = {
    v: {s: _population(v, s, paths) for s, paths in splits.items()} for v, splits in files.items()
  }
  dense_meta = next(iter(next(iter(raw[names.DENSE].values())).metadata))
  if dataset is None:
    from tf_forget.data import registry  # TensorFlow

    name = dataset_name or dense_meta.get("dataset")
    if not name:
      raise CollectError("predictions record no data set; pass dataset_name")
    options = dict(
      dataset_options if dataset_options is not None else dense_meta.get("dataset_options") or {}
    )
    try:
      dataset = registry.get(name, **options)
    except ValueError as e:
      raise CollectError(str(e).splitlines()[0]) from e
  spec = dataset.spec
  eval_split = spec.eval_split
  if eval_split not in raw[names.DENSE]:
    raise CollectError(
      f"no dense predictions on the evaluation split {eval_split!r} "
      f"(found: {', '.join(sorted(raw[names.DENSE]))})"
    )
  aligned = {}
  for variant, splits in raw.items():
    aligned[variant] = {}
    for split, pop in splits.items():
      if split not in raw[names.DENSE]:
        raise CollectError(f"{variant}/{split}: no dense predictions on split {split!r}")
      aligned[variant][split] = _align(pop, raw[names.DENSE][split], f"{variant}/{split}")
  no_labels = dataset_api.unlabelled(spec.options)  # every label NO_LABEL (docs/spec.md §8.8)
  for variant, splits in aligned.items():
    for split, pop in splits.items():
      if no_labels and (pop.labels != dataset_api.NO_LABEL).any():
        raise CollectError(f"{variant}/{split}: labels of a data set without labels")
      if pop.labels.size and (
        (pop.labels.min() < 0 and not no_labels)
        or pop.labels.max() >= spec.num_classes
        or pop.topk.max() >= spec.num_classes
      ):
        raise CollectError(
          f"{variant}/{split}: labels out of range for {spec.num_classes} classes of {spec.name!r}"
        )
  ref = aligned[names.DENSE][eval_split]
  attr_names = tuple(spec.attribute_names)
  attributes = {}
  if attr_names:
    data_ids, attrs = _stream_attributes(dataset, eval_split, attr_names)
    index = _index_of(data_ids, ref.ids, f"{names.DENSE}/{eval_split}")
    attributes = {n: attrs[n][index] for n in attr_names}
    if train_attribute_shares is None and "train" in spec.splits:
      _, train = _stream_attributes(dataset, "train", attr_names)
      train_attribute_shares = {n: float(v.mean()) for n, v in train.items() if v.size}
  return Run(
    run_dir=run_dir,
    dataset_name=spec.name,
    dataset_options=dict(spec.options or {}),
    num_classes=int(spec.num_classes),
    class_names=tuple(spec.class_names),
    eval_split=eval_split,
    protected_attributes=tuple(spec.protected_attributes),
    predictions=aligned,
    attributes=attributes,
    train_attribute_shares=dict(train_attribute_shares or {}),
    dataset=dataset,
    pairing=_pairing(run_dir, aligned, eval_split),
    caveats=_caveats(run_dir),
  )


def _caveats(run_dir):
  """The `caveats` of `<run_dir>/audit.json` (() without the file or the field)."""
  path = audit_json.path(run_dir)
  if not filesystem.exists(path):
    return ()
  try:
    doc = audit_json.read(path)
  except errors.Error as e:
    raise CollectError(errors.one_line(e, 300)) from e
  found = doc.get(audit_json.CAVEATS_KEY)
  return tuple(str(c) for c in found) if isinstance(found, list) else ()


def _pairing(run_dir, aligned, eval_split):
  """`Run.pairing`: every compressed variant against the dense evaluation population."""
  dense = [int(k) for k in aligned[names.DENSE][eval_split].members]
  cache = {}
  return {
    v: pairing_lib.pair_members(run_dir, v, _members(splits), dense, cache)
    for v, splits in sorted(aligned.items())
    if v != names.DENSE
  }


def images_for(run, ids):
  """uint8 `[len(ids), H, W, C]` images of the evaluation split for the given example ids.

  Reads only the requested images (`Dataset.examples`: CelebA's test split would not fit in
  memory whole).

  Raises:
    CollectError: no data set, or an id the split lacks.
  """
  ids = np.asarray(ids, np.int64)
  if run.dataset is None:
    raise CollectError("the run has no data set to take images from")
  try:
    return run.dataset.examples(run.eval_split, ids).images
  except dataset_api.DataError as e:
    raise CollectError(f"requested ids not in split {run.eval_split!r}: {e}") from e


def example_paths(run):
  """{example id: its path relative to the data root} of the evaluation split
  (`dataset_api.example_paths`), or None: the report's tables then leave the `path` column out."""
  return dataset_api.example_paths(run.dataset, run.eval_split)


def paths_of(paths, ids):
  """The `path` column for example `ids` (None: no column; unknown ids get "")."""
  if paths is None:
    return None
  return [paths.get(int(i), "") for i in ids]
