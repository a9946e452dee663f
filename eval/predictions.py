"""The predictions artifact (docs/artifacts/predictions.md): top-k labels per example id.

    <run>/predictions/<variant>/<k>/<split>.npz

`variant` is the audited variant name (SPEC §1.1: `dense`, `prune_0.9`, `full_int8`,
`prune_0.9+full_int8`, ...), `split` a data split (`test`) or a corrupted split
(`glass_blur@3`). One uncompressed `.npz` (numpy only, no pickle) holds:

  ids      int64 [N]       example ids, in the order evaluated
  labels   int64 [N]       true labels
  topk     int32 [N, k]    class indices by decreasing score, ties -> lowest index first
                           (SPEC §1.2); k = min(5, num_classes); topk[:, 0] is the top-1
  logits   float32 [N, C]  optional: the dequantized output scores
  metadata <U  0-d         JSON text: schema, variant, member, split, tflite sha256, ...

This module reads with numpy only (no TensorFlow); writing goes through `tf_forget.io.atomic`.
"""

import json
import os

import numpy as np

SCHEMA = "tf_forget.predictions/1"
MAX_TOPK = 5


class PredictionsError(ValueError):
  """A predictions file that is missing, malformed, or of another schema."""


def topk_size(num_classes):
  """k = 5, or the number of classes if fewer (issue #3)."""
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
  if "/" in split or not split:
    raise PredictionsError(f"bad split name {split!r}")
  return os.path.join(run_dir, "predictions", variant, str(k), f"{split}.npz")


def write(file_path, ids, labels, scores, metadata, save_logits=True):
  """Writes a predictions file atomically.

  Args:
    file_path: destination (see `path`).
    ids, labels: int `[N]`.
    scores: float `[N, C]` dequantized outputs.
    metadata: JSON-ready dict (schema is added).
    save_logits: also store `logits`.
  """
  from tf_forget.io import atomic  # pylint: disable=g-import-not-at-top  (imports TensorFlow)
  scores = np.asarray(scores, np.float32)
  meta = dict(metadata, schema=SCHEMA, num_examples=int(len(ids)),
              num_classes=int(scores.shape[1]), topk=topk_size(scores.shape[1]),
              has_logits=bool(save_logits))
  arrays = dict(
      ids=np.asarray(ids, np.int64),
      labels=np.asarray(labels, np.int64),
      topk=topk(scores, topk_size(scores.shape[1])),
      metadata=np.array(json.dumps(meta, sort_keys=True)))
  if save_logits:
    arrays["logits"] = scores
  atomic.write_npz(file_path, **arrays)


def read(file_path):
  """Reads a predictions file with numpy only.

  Returns:
    dict with `ids`, `labels`, `topk`, optional `logits` arrays and `metadata` (a dict).

  Raises:
    PredictionsError: missing, unreadable, or not of `SCHEMA`.
  """
  try:
    with np.load(file_path, allow_pickle=False) as data:
      out = {name: data[name] for name in data.files}
    meta = json.loads(str(out.pop("metadata")))
  except (OSError, ValueError, KeyError) as e:
    raise PredictionsError(f"cannot read predictions {file_path}: {e}") from e
  if meta.get("schema") != SCHEMA:
    raise PredictionsError(f"{file_path} has schema {meta.get('schema')!r}, not {SCHEMA!r}")
  n = meta["num_examples"]
  if any(out[name].shape[0] != n for name in ("ids", "labels", "topk")):
    raise PredictionsError(f"{file_path}: arrays do not have {n} rows")
  out["metadata"] = meta
  return out


def is_complete(file_path, tflite_sha256=None):
  """Whether a readable predictions file exists (for the same `.tflite` file, if given)."""
  if not os.path.exists(file_path):
    return False
  try:
    meta = read(file_path)["metadata"]
  except PredictionsError:
    return False
  return tflite_sha256 is None or meta.get("tflite_sha256") == tflite_sha256
