"""The predictions artifact (docs/artifacts/predictions.md): top-k labels per example id.

    <run>/predictions/<variant>/<k>/<split>.npz        (`layout.predictions`)

`variant` is the audited variant name (docs/spec.md §1.1: `dense`, `prune_0.9`, `full_int8`,
`prune_0.9+full_int8`, ...), `split` a data split (`test`) or a corrupted split
(`glass_blur@3`). One uncompressed `.npz` (numpy only, no pickle) holds:

  ids      int64 [N]       example ids, in the order evaluated
  labels   int64 [N]       true labels
  topk     int32 [N, k]    class indices by decreasing score, ties -> lowest index first
                           (docs/spec.md §1.2); k = min(5, num_classes); topk[:, 0] is the top-1
  logits   float32 [N, C]  optional: the dequantized output scores
  metadata <U  0-d         JSON text: schema, variant, member, split, `inputs` (lineage), ...

`inputs` = {"tflite": sha256 of the `.tflite` bytes that were run, "split": the input split's
identity (`split_identity`)}; the Keras predictions record {"model": sha256 of model.keras,
"split": ...}. Next to the file, `<split>.npz.sha256` records the sha256 of the file as written
(`lineage.record_own`): `status` redoes a file whose bytes differ (another valid predictions
file copied over it). Numpy + JSON only (no TensorFlow).
"""

import json

import numpy as np

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import hashing
from tf_forget.artifacts import layout
from tf_forget.artifacts import lineage
from tf_forget.artifacts import names

SCHEMA = "tf_forget.predictions/1"
MAX_TOPK = 5


class PredictionsError(errors.ReadError):
  """A predictions file that is missing, malformed, or of another schema."""


def topk_size(num_classes):
  """k = 5, or the number of classes if fewer."""
  return min(MAX_TOPK, int(num_classes))


def topk(scores, k):
  """Top-k class indices `[N, k]` int32 of float scores `[N, C]`; ties -> lowest index (§1.2).

  A stable sort of the negated scores keeps tied classes in index order, so `topk[:, 0]`
  equals `np.argmax(scores, axis=1)`.
  """
  scores = np.asarray(scores)
  order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
  return order.astype(np.int32)


def path(run_dir, variant, k, split):
  """`<run>/predictions/<variant>/<k>/<split>.npz`."""
  try:
    return layout.predictions(run_dir, variant, k, split)
  except names.SplitNameError as e:
    raise PredictionsError(f"bad split name {split!r}") from e


CONTENT = "content"  # the user data sets' option {split: sha256 of its files}


def without_content(options):
  """`options` without the content digests (`CONTENT`, also inside the `calibration` and
  `train_data` sources): what a run directory's `audit.json` records of a data set, since a
  changed file redoes what depends on it instead of refusing the run."""
  out = {}
  for key, value in dict(options or {}).items():
    if key == CONTENT:
      continue
    if isinstance(value, dict) and CONTENT in value:
      value = {k: v for k, v in value.items() if k != CONTENT}
    out[key] = value
  return out


def split_identity(dataset_name, options, split, corruption_meta_sha256=None):
  """sha256 naming an input split: (data set, options, split), or a corruption cache entry.

  The user's data records the content of each split in its options (`CONTENT`:
  {split: sha256 of its files}); a split's identity holds its own digest only, so that a
  changed train split or calibration folder does not redo what was evaluated on the test split.

  Args:
    dataset_name, options, split: the clean split (options as the data set's `spec.options`).
    corruption_meta_sha256: for a corrupted split, the sha256 of its cache entry's
      `meta.json` (which records the data set, options, source split, corruption, severity,
      table and seed it was generated from); then the other arguments are not used.
  """
  if corruption_meta_sha256 is not None:
    return hashing.sha256_json({"corrupted_split_meta": corruption_meta_sha256})
  content = dict(dict(options or {}).get(CONTENT) or {}).get(split)
  opts = {
    str(k): (v if isinstance(v, (bool, int, float, str, type(None))) else repr(v))
    for k, v in without_content(options).items()
  }
  key = {"dataset": dataset_name, "options": opts, "split": split}
  if content is not None:
    key[CONTENT] = content
  return hashing.sha256_json(key)


def write(file_path, ids, labels, scores, metadata, save_logits=True):
  """Writes a predictions file atomically.

  Args:
    file_path: destination (see `path`).
    ids, labels: int `[N]`.
    scores: float `[N, C]` dequantized outputs.
    metadata: JSON-ready dict (schema is added), with `inputs` (lineage).
    save_logits: also store `logits`.

  Raises:
    errors.WriteError: the file cannot be written.
  """
  scores = np.asarray(scores, np.float32)
  meta = dict(
    metadata,
    schema=SCHEMA,
    num_examples=int(len(ids)),
    num_classes=int(scores.shape[1]),
    topk=topk_size(scores.shape[1]),
    has_logits=bool(save_logits),
  )
  arrays = dict(
    ids=np.asarray(ids, np.int64),
    labels=np.asarray(labels, np.int64),
    topk=topk(scores, topk_size(scores.shape[1])),
    metadata=np.array(json.dumps(meta, sort_keys=True)),
  )
  if save_logits:
    arrays["logits"] = scores
  fileio.write_npz(file_path, **arrays)
  lineage.record_own(file_path)


def read(file_path):
  """Reads a predictions file with numpy only.

  Returns:
    dict with `ids`, `labels`, `topk`, optional `logits` arrays and `metadata` (a dict).

  Raises:
    PredictionsError: missing, unreadable (truncated, not a zip), not of `SCHEMA`, or arrays
      of the wrong shapes.
  """
  try:
    out, meta = fileio.read_npz_with_metadata(file_path, "predictions")
  except errors.ReadError as e:
    raise PredictionsError(str(e)) from e
  if meta.get("schema") != SCHEMA:
    raise PredictionsError(f"{file_path} has schema {meta.get('schema')!r}, not {SCHEMA!r}")
  try:
    n = int(meta["num_examples"])
    bad = any(out[name].shape[:1] != (n,) for name in ("ids", "labels", "topk"))
    bad = bad or out["topk"].ndim != 2
    if "logits" in out:
      bad = bad or out["logits"].shape != (n, int(meta["num_classes"]))
  except (KeyError, TypeError, ValueError) as e:
    raise PredictionsError(f"{file_path}: missing array or metadata {e}") from e
  if bad:
    raise PredictionsError(f"{file_path}: arrays do not have {n} rows")
  out["metadata"] = meta
  return out


def status(file_path, inputs, need_logits=False, verb="evaluated"):
  """`lineage.Status` of a predictions file for the given current `inputs`.

  Args:
    file_path: the predictions file.
    inputs: {name: sha256} it must record (`tflite`, `split`; or `model`, `split`).
    need_logits: also require stored logits.
    verb: for the reason ("evaluated").
  """

  def logits(meta):
    return "it has no logits" if need_logits and not meta.get("has_logits") else None

  return lineage.status(
    lambda: read(file_path)["metadata"],
    inputs,
    verb,
    exists=lambda: filesystem.exists(file_path),
    extra=logits,
    own=file_path,
  )


def is_complete(file_path, tflite_sha256=None):
  """Whether a readable predictions file exists (for the same `.tflite` bytes, if given)."""
  try:
    meta = read(file_path)["metadata"]
  except PredictionsError:
    return False
  return tflite_sha256 is None or meta.get("tflite_sha256") == tflite_sha256
