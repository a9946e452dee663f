"""The report's deployment table: encoding, size, latency and accuracy per variant.

Reads `<run>/eval/encodings.json` (`tf_forget.artifacts.encodings`, written by
`tf_forget.evaluate.encodings.choose`; docs/artifacts/predictions.md) and joins it with the report's
population accuracies: per variant, the encoding shipped and why, the runtime path of the shipped
file, the raw sizes of the plain and sparse files of the deployed member, the shipped size
relative to the dense float32 file (the trade-off a user ships on: size vs accuracy), and the
median latencies of both files at batch 1 and the user's batch measured in the same run, the
shipped file's latency over the float reference's (timed in the same rounds: median and
interquartile range of the per-round ratios), what ran it (`runtime_words`: ops delegated to
XNNPACK / all ops) and which deployment targets run it (`runs_on_<target>`, `why_not_<target>`:
`tf_forget.evaluate.targets`).
"""

import pandas as pd

from tf_forget.artifacts import encodings as encodings_file
from tf_forget.artifacts import filesystem


def load(run_dir):
  """The encodings artifact of a run, or None if there is none.

  Raises:
    errors.ReadError: an unreadable file, or one of another schema (`errors.SchemaError`).
  """
  path = encodings_file.path(run_dir)
  if not filesystem.exists(path):
    return None
  return encodings_file.read(path)


def _ms(entry, encoding, batch):
  value = ((entry.get("latency_s") or {}).get(encoding) or {}).get(f"batch_{batch}")
  return None if value is None else 1000 * value


def runtime_words(entry):
  """What ran the shipped file: 'XNNPACK 5/5 ops', 'XNNPACK 3/5 ops (2 on reference kernels:
  CONV_2D x2)', or 'reference kernels, 0/5 ops delegated (CONV_2D, ...)'; the recorded runtime
  name when the entry has no op count."""
  d = entry.get("delegation")
  if not d:
    return entry.get("runtime") or ""
  left = d.get("builtin_ops") or {}
  names = ", ".join(f"{op} x{n}" if n > 1 else op for op, n in sorted(left.items()))
  if not d["delegated_ops"]:
    return f"reference kernels, 0/{d['ops']} ops delegated ({names})"
  rest = d["ops"] - d["delegated_ops"]
  return f"XNNPACK {d['delegated_ops']}/{d['ops']} ops" + (
    f" ({rest} on reference kernels: {names})" if rest else ""
  )


def table(doc, variants_summary):
  """One row per variant (report order), numbers as documented in the module docstring.

  Args:
    doc: the encodings artifact (`load`).
    variants_summary: the variants' summaries (`units.overview.summaries`: top-1 and its
      change).

  Returns:
    DataFrame.
  """
  rows = []
  batches = doc.get("batch_sizes", [1, 64])
  order = [v for v in variants_summary if v in doc["variants"]]
  order += sorted(v for v in doc["variants"] if v not in order)
  for variant in order:
    e = doc["variants"][variant]
    sizes = e.get("size_bytes") or {}
    plain = (sizes.get("plain") or {}).get("raw")
    sparse = (sizes.get("sparse") or {}).get("raw")
    row = {
      "variant": variant,
      "encoding": e["encoding"],
      "runtime": runtime_words(e),
      "sparsity": e.get("sparsity"),
      "top1": (variants_summary.get(variant) or {}).get("top1"),
      "top1_change": (variants_summary.get(variant) or {}).get("top1_change"),
      "plain_bytes": plain,
      "sparse_bytes": sparse,
      "plain_gzip_bytes": (sizes.get("plain") or {}).get("gzip"),
      "sparse_gzip_bytes": (sizes.get("sparse") or {}).get("gzip"),
      "sparse_to_plain": e.get("sparse_to_plain_size"),
      "shipped_vs_dense_float32": e.get("size_ratio_to_dense_float32"),
    }
    for b in batches:
      row[f"plain_ms_b{b}"] = _ms(e, "plain", b)
      row[f"sparse_ms_b{b}"] = _ms(e, "sparse", b)
      ratio = (e.get("latency_vs_reference") or {}).get(f"batch_{b}") or {}
      for part, key in (("", "median"), ("_low", "low"), ("_high", "high")):
        row[f"vs_reference_b{b}{part}"] = ratio.get(key)
    for target, says in (e.get("targets") or {}).items():
      row[f"runs_on_{target}"], row[f"why_not_{target}"] = says["runs"], says.get("reason", "")
    row["sparse_runtime"] = e.get("sparse_runtime") or ""
    row["latency_ratio"] = e.get("latency_ratio")
    row["reason"] = e.get("reason", "")
    rows.append(row)
  return pd.DataFrame(rows)


def compute(run_dir, variants_summary):
  """(tables {"deployment": DataFrame} or {}, notes, settings dict or None)."""
  doc = load(run_dir)
  if doc is None:
    return {}, ["no deployment encodings in the run (eval/encodings.json)"], None
  settings = {
    k: doc.get(k)
    for k in ("mode", "max_sparse_latency_ratio", "split", "k", "batch_sizes", "num_threads")
  }
  return {"deployment": table(doc, variants_summary)}, [], settings
