"""Agreement of a TFLite file with its reference: top-1 agreement and logit error.

Every format is checked against the float32 `.tflite` of the same member
(docs/spec.md §1.3: quantized member k is the quantization of dense member k) and against the Keras
model it came from. Top-1 is the argmax with ties to the lowest index, after int8 outputs are
dequantized (docs/spec.md §1.2). The logit errors are absolute differences of the (dequantized)
output scores; they are only comparable between formats of the same member.

Twin check: a sparse-encoded file stores the same weights as its plain twin, so its
predictions must be the same: top-1 identical on every example, and every score within
`atol + rtol * |plain score|` with rtol = 1e-4 and atol = 1e-4 for float outputs (the two
files may run on different runtime paths, XNNPACK vs the built-in kernels, whose float
accumulation order differs: measured differences are ~1e-7 on small CNNs) or one output
quantization step for int8 outputs (the built-in and XNNPACK int8 kernels round a requantized
accumulator differently by one step: measured on a 90%-pruned tiny CNN, `full_int8+sparse` on
the built-in kernels vs plain `full_int8` on XNNPACK, some scores differ by exactly one step,
top-1 identical). Any difference is a one-line reason.
"""

import functools

import numpy as np

from tf_forget.artifacts import errors
from tf_forget.artifacts import predictions
from tf_forget.data import input_layout


class AgreementError(errors.Error):
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


TWIN_RTOL = 1e-4
TWIN_ATOL = 1e-4


def twin_tolerance(output_scale=None):
  """Absolute score tolerance of the twin check: 1e-4, or one int8 output step if larger.

  One step is `1.001 * scale`: `(q - z) * s` is computed in float32, so two dequantized
  scores one step apart can differ by a few ulps more than `s`.
  """
  return max(TWIN_ATOL, 1.001 * float(output_scale or 0.0))


def twin_mismatch(scores, plain_scores, topk=None, plain_topk=None, output_scale=None):
  """Why a sparse file's predictions differ from its plain twin's, or None if they are equal.

  Args:
    scores, plain_scores: float `[N, C]` dequantized scores, or None (then top-1 only).
    topk, plain_topk: int `[N, k]` (used when scores are missing).
    output_scale: the int8 output tensor's scale (None for float outputs).

  Returns:
    None, or a one-line reason (how many top-1 differ, the largest score difference).
  """
  if scores is not None and plain_scores is not None:
    scores = np.asarray(scores, np.float32)
    plain_scores = np.asarray(plain_scores, np.float32)
    if scores.shape != plain_scores.shape:
      return f"scores {scores.shape} vs plain twin {plain_scores.shape}"
    top1, plain_top1 = np.argmax(scores, 1), np.argmax(plain_scores, 1)
  else:
    top1, plain_top1 = np.asarray(topk)[:, 0], np.asarray(plain_topk)[:, 0]
  reasons = []
  differ = int(np.sum(top1 != plain_top1))
  if differ:
    reasons.append(f"top-1 differs on {differ} of {len(top1)} examples")
  if scores is not None and plain_scores is not None:
    atol = twin_tolerance(output_scale)
    err = np.abs(scores - plain_scores)
    over = err > atol + TWIN_RTOL * np.abs(plain_scores)
    if np.any(over):
      reasons.append(
        f"{int(np.sum(over))} scores differ by up to {float(err.max()):.3g} "
        f"(tolerance {atol:.3g} + {TWIN_RTOL:g} x |score|)"
      )
  return ("sparse file disagrees with its plain twin: " + "; ".join(reasons)) if reasons else None


def compare_twin_files(path, plain_path, output_scale=None):
  """Twin check of two predictions files: `compare` fields plus `equal`, `reason`, `atol`.

  Raises:
    AgreementError: the two files are not on the same example ids.
  """
  a, b = predictions.read(path), predictions.read(plain_path)
  if not np.array_equal(a["ids"], b["ids"]):
    raise AgreementError(
      "the sparse file's predictions and its plain twin's are not on the same example ids"
    )
  both = "logits" in a and "logits" in b
  if both:
    result = compare(a["logits"], b["logits"])
  else:
    result = {
      "n": int(len(a["ids"])),
      "top1_agreement": float(np.mean(a["topk"][:, 0] == b["topk"][:, 0])),
      "max_abs_logit_error": None,
      "mean_abs_logit_error": None,
    }
  reason = twin_mismatch(a.get("logits"), b.get("logits"), a["topk"], b["topk"], output_scale)
  return dict(
    result,
    equal=reason is None,
    reason=reason,
    logits_checked=both,
    atol=twin_tolerance(output_scale),
    rtol=TWIN_RTOL,
    runtime=a["metadata"].get("runtime"),
    plain_runtime=b["metadata"].get("runtime"),
  )


def compare_files(path, reference_path):
  """`compare` on two predictions files; top-1 only (from `topk`) if either lacks logits."""
  a, b = predictions.read(path), predictions.read(reference_path)
  if "logits" in a and "logits" in b:
    return compare(a["logits"], b["logits"], a["ids"], b["ids"])
  if not np.array_equal(a["ids"], b["ids"]):
    raise AgreementError("the two predictions are not on the same example ids")
  return {
    "n": int(len(a["ids"])),
    "top1_agreement": float(np.mean(a["topk"][:, 0] == b["topk"][:, 0])),
    "max_abs_logit_error": None,
    "mean_abs_logit_error": None,
  }


def keras_scores(model, batches, batch_size=256):
  """Keras logits `[N, C]` (inference mode) of a stream of `Examples`, fed as at evaluation
  (in the model's input layout, `input_layout`: NHWC, grey NHW or channels-first NCHW).

  Returns:
    (ids int64 [N], labels int64 [N], scores float32 [N, C]).
  """
  import tensorflow as tf  # only where a Keras model runs

  shape = tuple(model.inputs[0].shape)
  layout = input_layout.from_shape(shape)
  # One graph for every batch (traced once, for any batch size), not eager layer by layer: the
  # same logits, bit for bit (tests/evaluate/evaluate_test.py), in half the time. A partial,
  # not a lambda: TensorFlow counts traces by the function's code, and a worker calling this for
  # model after model would log "triggered tf.function retracing" for every one.
  call = tf.function(
    functools.partial(model.__call__, training=False),
    input_signature=[tf.TensorSpec((None,) + shape[1:], tf.float32)],
  )
  ids, labels, scores = [], [], []
  for batch in batches:
    images = layout.to_model(np.asarray(batch.images, np.float32))
    for start in range(0, len(images), batch_size):
      scores.append(np.asarray(call(images[start : start + batch_size])))
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
