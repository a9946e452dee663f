"""Agreement of a TFLite file with its reference: top-1 agreement and logit error.

Issue #3: every format is checked against the float32 `.tflite` of the same member
(SPEC §1.3: quantized member k is the quantization of dense member k) and against the Keras
model it came from. Top-1 is the argmax with ties to the lowest index, after int8 outputs are
dequantized (SPEC §1.2). The logit errors are absolute differences of the (dequantized) output
scores; they are only comparable between formats of the same member.
"""

import numpy as np

from eval import predictions


class AgreementError(ValueError):
  """Predictions that cannot be compared (different examples or classes)."""


def compare(scores, reference, ids=None, reference_ids=None):
  """Top-1 agreement and logit error of `scores` against `reference`.

  Args:
    scores, reference: float `[N, C]`.
    ids, reference_ids: optional int `[N]`: must be equal (same examples, same order).

  Returns:
    {"n", "top1_agreement", "max_abs_logit_error", "mean_abs_logit_error"}.

  Raises:
    AgreementError: shapes or ids differ.
  """
  scores, reference = np.asarray(scores, np.float32), np.asarray(reference, np.float32)
  if scores.shape != reference.shape:
    raise AgreementError(f"scores {scores.shape} vs reference {reference.shape}")
  if ids is not None and reference_ids is not None and not np.array_equal(ids, reference_ids):
    raise AgreementError("the two predictions are not on the same example ids")
  err = np.abs(scores - reference)
  return {
      "n": int(scores.shape[0]),
      "top1_agreement": float(np.mean(np.argmax(scores, 1) == np.argmax(reference, 1))),
      "max_abs_logit_error": float(err.max()) if err.size else float("nan"),
      "mean_abs_logit_error": float(err.mean()) if err.size else float("nan"),
  }


def compare_files(path, reference_path):
  """`compare` on two predictions files; top-1 only (from `topk`) if either lacks logits."""
  a, b = predictions.read(path), predictions.read(reference_path)
  if "logits" in a and "logits" in b:
    return compare(a["logits"], b["logits"], a["ids"], b["ids"])
  if not np.array_equal(a["ids"], b["ids"]):
    raise AgreementError("the two predictions are not on the same example ids")
  return {"n": int(len(a["ids"])),
          "top1_agreement": float(np.mean(a["topk"][:, 0] == b["topk"][:, 0])),
          "max_abs_logit_error": None, "mean_abs_logit_error": None}


def keras_scores(model, batches, batch_size=256):
  """Keras logits `[N, C]` (inference mode) of a stream of `Examples`, fed as at evaluation.

  Returns:
    (ids int64 [N], labels int64 [N], scores float32 [N, C]).
  """
  ids, labels, scores = [], [], []
  for batch in batches:
    images = np.asarray(batch.images, np.float32)
    for start in range(0, len(images), batch_size):
      scores.append(np.asarray(model(images[start:start + batch_size], training=False)))
    ids.append(np.asarray(batch.ids, np.int64))
    labels.append(np.asarray(batch.labels, np.int64))
  return np.concatenate(ids), np.concatenate(labels), np.concatenate(scores).astype(np.float32)


def summarize(rows, key):
  """Per-variant summary of agreement rows: min/mean top-1 agreement, max/mean logit errors.

  Args:
    rows: dicts with "variant" and `key` -> a `compare` dict (or None).
    key: "vs_float32_tflite" or "vs_keras".

  Returns:
    {variant: {"members", "min_top1_agreement", "mean_top1_agreement",
               "max_abs_logit_error", "mean_abs_logit_error"}}.
  """
  out = {}
  for variant in dict.fromkeys(r["variant"] for r in rows):
    cmp = [r[key] for r in rows if r["variant"] == variant and r.get(key)]
    if not cmp:
      continue
    agree = [c["top1_agreement"] for c in cmp]
    max_err = [c["max_abs_logit_error"] for c in cmp if c["max_abs_logit_error"] is not None]
    mean_err = [c["mean_abs_logit_error"] for c in cmp if c["mean_abs_logit_error"] is not None]
    out[variant] = {
        "members": len(cmp),
        "min_top1_agreement": min(agree),
        "mean_top1_agreement": float(np.mean(agree)),
        "max_abs_logit_error": max(max_err) if max_err else None,
        "mean_abs_logit_error": float(np.mean(mean_err)) if mean_err else None,
    }
  return out
