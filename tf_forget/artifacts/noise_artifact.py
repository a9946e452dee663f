"""The l-inf noise artifact and protocol (003 §4.1, App. D.1; docs/spec.md §6.7); numpy + JSON only.

003 injects U(-ε, ε) noise into the *normalized* network input, for a random subset of 1000 test
images and 100 draws, and reads two things off it: accuracy per noise level (its Figure 1 / 28:
prune potential collapses as ε grows) and the functional similarity of a compressed network to its
dense counterpart (Figure 4: share of matching labels and L2 distance of the softmax outputs).
`tf_forget.evaluate.noise_eval` writes the per-file raw material for both:

    <run>/noise/<variant>/<k>/linf.npz

| array | dtype / shape | meaning |
| --- | --- | --- |
| `eps` | float64 `[L]` | the noise levels ε (normalized-input units) |
| `ids`, `labels` | int64 `[N]` | the evaluated examples (sorted ids) and their true labels |
| `top1` | int32 `[L, D, N]` | top-1 label of draw d at level l |
| `softmax` | float16 `[L, D, N, C]` | softmax of the (dequantized) scores |
| `metadata` | `<U` 0-d | JSON: schema, variant, k, format, protocol, noise_scale, runtime, `inputs`, ... |

`inputs` (lineage) = {"tflite": sha256 of the `.tflite` bytes run, "split": identity of the
examples (`predictions.split_identity` of the eval split), "protocol": sha256 of the protocol
JSON, "noise_scale": sha256 of the per-channel scale}; an artifact is reused only if all match
and its bytes are those written (`linf.npz.sha256`, `lineage.record_own`).

Noise, identical for every file of a run: draw d is one U(-1, 1) field drawn with
`np.random.default_rng([seed, d]).uniform(-1, 1)`, and level l's noise is ε_l times it
(the law of `noise_corruptions.linf_uniform_noise`, the levels sharing one draw; common random
numbers: differences between levels and between models are not draw noise). At ε = 0 one draw is
run and repeated. The models normalise inside (docs/artifacts/members.md: input = raw pixels in
[0, 255], then `(x / 255 − mean) / std`), so ε in normalized units is ε · 255 · std_c raw
units on channel c; we add that to the raw float pixels, not clipped to [0, 255] (003 adds it
after normalisation). Integer-input files (`full_int8`) see it through their own input
quantization, which saturates at the int8 range, as on a device. Examples: all of the eval
split if it has at most `examples`, else a random subset (seed `seed`) of that size.
"""

import dataclasses
import json
from typing import Sequence

import numpy as np

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import layout
from tf_forget.artifacts import lineage

SCHEMA = "tf_forget.linf_noise/1"
FILE_NAME = layout.NOISE_FILE
# docs/spec.md §6.7: ε grid linspace(0, 0.7, 15), 1000 test images x 100 draws.
PAPER_EPS = tuple(round(float(e), 6) for e in np.linspace(0.0, 0.7, 15))
PAPER_DRAWS = 100
PAPER_EXAMPLES = 1000


class NoiseError(errors.Error):
  """A bad noise protocol or an unreadable noise artifact (one line)."""


class NoiseReadError(NoiseError, errors.ReadError):
  """A noise artifact that is missing, truncated or inconsistent."""


@dataclasses.dataclass(frozen=True)
class NoiseProtocol:
  """Which noise levels, how many draws, on how many examples.

  Attributes:
    eps: noise levels ε >= 0 in normalized-input units (docs/spec.md §6.7 grid by default).
    draws: noise draws per example and level (003: 100).
    examples: evaluated examples, at most (003: 1000).
    seed: seed of the example subset and of the noise draws.
  """

  eps: Sequence[float] = PAPER_EPS
  draws: int = PAPER_DRAWS
  examples: int = PAPER_EXAMPLES
  seed: int = 0

  def check(self):
    """Raises `NoiseError` unless ε >= 0 (finite, ascending), draws >= 1, examples >= 1."""
    eps = np.asarray(self.eps, dtype=np.float64)
    if eps.ndim != 1 or not eps.size or not np.all(np.isfinite(eps)) or np.any(eps < 0):
      raise NoiseError(f"noise levels must be finite numbers >= 0, got {list(self.eps)}")
    if np.any(np.diff(eps) <= 0):
      raise NoiseError(f"noise levels must be strictly ascending, got {list(self.eps)}")
    if self.draws < 1 or self.examples < 1:
      raise NoiseError(f"draws and examples must be >= 1, got {self.draws}, {self.examples}")

  def to_json(self):
    return {
      "eps": [float(e) for e in self.eps],
      "draws": int(self.draws),
      "examples": int(self.examples),
      "seed": int(self.seed),
    }


def path(run_dir, variant, k):
  """`<run>/noise/<variant>/<k>/linf.npz`."""
  return layout.noise(run_dir, variant, k)


def read(file_path):
  """Reads a `linf.npz` artifact: dict of the arrays above, `metadata` as a dict.

  Raises:
    NoiseError: missing, truncated or inconsistent file.
  """
  try:
    out, meta = fileio.read_npz_with_metadata(file_path, "noise artifact")
  except errors.ReadError as e:
    raise NoiseReadError(str(e)) from e
  if meta.get("schema") != SCHEMA:
    raise NoiseReadError(f"{file_path}: schema {meta.get('schema')!r}, expected {SCHEMA!r}")
  try:
    l, n = out["eps"].size, out["ids"].size
    shape = out["top1"].shape
    bad = (
      len(shape) != 3
      or shape[0] != l
      or shape[2] != n
      or out["softmax"].shape[:3] != shape
      or out["labels"].shape != (n,)
    )
  except KeyError as e:
    raise NoiseReadError(f"{file_path}: missing array {e}") from e
  if bad:
    raise NoiseReadError(f"{file_path}: arrays disagree on levels / draws / examples")
  out["metadata"] = meta
  return out


def status(out_path, inputs):
  """`lineage.Status` of an artifact for the current `inputs` (see the module doc)."""
  return lineage.status(
    lambda: read(out_path)["metadata"],
    inputs,
    "evaluated",
    exists=lambda: filesystem.exists(out_path),
    own=out_path,
  )


def is_complete(out_path, tflite_sha256, protocol):
  """Whether a readable artifact exists for the same protocol (and `.tflite` sha256, if given)."""
  try:
    meta = read(out_path)["metadata"]
  except NoiseError:
    return False
  return meta.get("protocol") == protocol.to_json() and (
    tflite_sha256 is None or meta.get("tflite_sha256") == tflite_sha256
  )


def write(out_path, eps, ids, labels, top1, softmax, metadata):
  """Writes one artifact atomically (`metadata` gets the schema).

  Raises:
    errors.WriteError: the file cannot be written.
  """
  meta = dict(metadata, schema=SCHEMA)
  fileio.write_npz(
    out_path,
    eps=np.asarray(eps, np.float64),
    ids=np.asarray(ids, np.int64),
    labels=np.asarray(labels, np.int64),
    top1=np.asarray(top1, np.int32),
    softmax=np.asarray(softmax, np.float16),
    metadata=np.array(json.dumps(meta, sort_keys=True)),
  )
  lineage.record_own(out_path)
  return meta
