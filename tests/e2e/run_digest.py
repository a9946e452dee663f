"""Digests of an audit run directory that two runs of the same audit must share.

Shared by the fixtures' golden test and the executor test: export hashes
and sizes, per (file, split) the number of correct top-1 labels and the sha256 of the top-1
vector (test split, corrupted splits, l-inf noise), and report.json's numbers — the variant
summaries, the recommendation and readable tables value by value, every other table but the
timed `deployment` one (and the verdict's latency columns) by the sha256 of its canonical JSON
(floats to 10 digits).
"""

import glob
import hashlib
import json
import os
import zipfile

import numpy as np

from tests import timed


def sha(path):
  with open(path, "rb") as f:
    return hashlib.sha256(f.read()).hexdigest()


def npz(path):
  with np.load(path, allow_pickle=False) as data:
    out = {k: data[k] for k in data.files}
  out["metadata"] = json.loads(str(out["metadata"]))
  return out


def _rel(run, path):
  return os.path.relpath(path, run)


def exports(run):
  """{"<member variant>/<k>/<format>": (sha256, size)} of the plain .tflite files."""
  found = {}
  for path in sorted(glob.glob(os.path.join(run, "tflite", "*", "*", "*.tflite"))):
    member_variant, k, name = _rel(run, path).split(os.sep)[1:]
    found[f"{member_variant}/{k}/{name[: -len('.tflite')]}"] = (sha(path), os.path.getsize(path))
  return found


def predictions(run):
  """{"<variant>/<k>/<split>": {"correct", "top1_sha256"}} of predictions and noise files."""
  found = {}
  for path in sorted(glob.glob(os.path.join(run, "predictions", "*", "*", "*.npz"))):
    variant, k, name = _rel(run, path).split(os.sep)[1:]
    data = npz(path)
    top1 = np.ascontiguousarray(data["topk"][:, 0], np.int32)
    found[f"{variant}/{k}/{name[:-4]}"] = {
      "correct": int(np.sum(top1 == data["labels"])),
      "top1_sha256": hashlib.sha256(top1.tobytes()).hexdigest(),
    }
  for path in sorted(glob.glob(os.path.join(run, "noise", "*", "*", "linf.npz"))):
    variant, k, _ = _rel(run, path).split(os.sep)[1:]
    data = npz(path)
    top1 = np.ascontiguousarray(data["top1"], np.int32)
    found[f"{variant}/{k}/linf"] = {
      "correct": [int(np.sum(top1[l] == data["labels"][None])) for l in range(len(top1))],
      "top1_sha256": hashlib.sha256(top1.tobytes()).hexdigest(),
    }
  return found


# Tables pinned value by value in the golden file; every other table but the timed
# `deployment` one (and `UNPINNED_TABLES`) is pinned by the sha256 of its canonical JSON
# (floats to 10 digits).
READABLE_TABLES = (
  "topline",
  "pie",
  "robustness",
  "noise_accuracy",
  "noise_similarity",
  "recall_distortion",
)
# Not pinned here: the output-divergence tables (pinning them means regenerating the golden
# file); their numbers are checked against hand-computed KL and Δp on planted logits by
# tests/report/divergence_numbers_test.py.
# Nor the per-layer error (`layers`, `repair`): the QuantizationDebugger's float errors vary with
# the CPU's kernels (a sha256 of them cannot hold on another machine); they are recomputed from
# the predictions and export files by tests/e2e/repair_stages_test.py.
UNPINNED_TABLES = (
  "deployment",
  "divergence",
  "divergence_classes",
  "divergence_subgroups",
  "divergence_examples",
  "layers",
  "repair",
)


def canonical(value):
  if isinstance(value, dict):
    return {str(k): canonical(v) for k, v in value.items()}
  if isinstance(value, list):
    return [canonical(v) for v in value]
  if isinstance(value, float):
    return f"{value:.9e}"
  return value


def report_numbers(report):
  """The pinned part of report.json: variants, readable tables, hashes of the others."""
  tables = dict(report["tables"])
  # The verdict's latency columns are timings (like the `deployment` table): not pinned; nor the
  # ship rule's verdict and reason of a row, which weigh latency (a file "dominated" in one run
  # may be on the front in the next); its gate column and numbers are.
  tables["verdict"] = [
    {k: v for k, v in row.items() if not k.startswith("latency") and k not in ("verdict", "reason")}
    for row in tables.get("verdict", [])
  ]
  return json.loads(
    json.dumps(
      {
        "variants": report["variants"],
        # The front (and what the choice gives up against it) weighs latency: not pinned.
        "recommendation": timed.without_timings(
          {
            k: v
            for k, v in (report.get("recommendation") or {}).items()
            if k not in ("front", "front_note", "gives_up")
          }
        ),
        "tables": {k: tables[k] for k in READABLE_TABLES if k in tables},
        "subgroups_fnr": [r for r in tables.get("subgroups", []) if r["metric"] == "fnr"],
        "tables_sha256": {
          k: hashlib.sha256(json.dumps(canonical(v), sort_keys=True).encode()).hexdigest()
          for k, v in tables.items()
          if k not in READABLE_TABLES + UNPINNED_TABLES
        },
      }
    )
  )


def digest(run, report, exact_formats):
  """What two runs of the same audit must share: export hashes (of `exact_formats`) and sizes,
  per-file prediction digests, and the report's numbers (not its timings)."""
  files = exports(run)
  return {
    "exports_sha256": {k: h for k, (h, _) in files.items() if k.rsplit("/", 1)[1] in exact_formats},
    "exports_size": {k: size for k, (_, size) in files.items()},
    "predictions": predictions(run),
    "report": report_numbers(report),
  }


def model_content_sha(path):
  """sha256 of a `.keras` file's architecture and weights entries.

  The zip also holds the save time (its metadata.json, the weights entry's timestamp), so its
  own bytes differ between any two saves; its content entries do not.
  """
  content = hashlib.sha256()
  with zipfile.ZipFile(path) as z:
    for name in ("config.json", "model.weights.h5"):
      content.update(z.read(name))
  return content.hexdigest()
