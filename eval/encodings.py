"""Per-variant choice of the shipped encoding, plain or sparse, with sizes and latencies (#10).

    <run>/eval/encodings.json     schema `tf_forget.encodings/1` (docs/artifacts/predictions.md)

For every audited (plain) variant, the deployed member k (0 by default) is looked at with its
sparse-encoded twin (`tflite_export`, SPEC §1.1 names): the twin check on the eval split
(`eval.population` writes it into `eval/agreement/<split>.json`; a failed sparse conversion
is there too), the raw / gzip sizes from the export JSON, and the median latency of both files
at batch 1 and 64 with the interpreter threads of the audit, measured interleaved in the same
run (`eval.latency`, as on a device: XNNPACK, else the built-in kernels). `deploy.choose_encoding`
then decides. The latency bound is checked at the batch size where the sparse file fares worst
(the ratio a user can count on). The entry records the runtime path of the chosen file, its size
relative to the dense float32 file of the same member k, and the latency ratio to the plain
file (1 when plain is shipped).
"""

from eval import deploy
from eval import evaluate
from eval import latency
from tf_forget.artifacts import fileio
from tf_forget.artifacts import layout
from tf_forget.io import atomic
from tflite_export import formats

SCHEMA = "tf_forget.encodings/1"
DEFAULT_REPEATS = 20


def path(run_dir):
  """`<run>/eval/encodings.json`."""
  return layout.encodings(run_dir)


def _medians(result, batch_sizes):
  return {f"batch_{b}": result[f"batch_{b}"]["median_s"] for b in batch_sizes}


def _twin_check(agreement, sparse_name, k):
  """(equal, reason) of the sparse file's twin check on the eval split."""
  for row in agreement.get("rows", []):
    if row["variant"] == sparse_name and int(row["k"]) == k:
      check = row.get("vs_plain_twin") or {}
      return bool(check.get("equal")), check.get("reason")
  return False, "sparse file not evaluated against its plain twin"


def choose(run_dir, variants, split, k=0, mode="auto",
           max_latency_ratio=deploy.DEFAULT_MAX_LATENCY_RATIO, num_threads=2,
           batch_sizes=latency.DEFAULT_BATCH_SIZES, repeats=DEFAULT_REPEATS, log=None):
  """Chooses plain or sparse for each variant and writes `eval/encodings.json`.

  Args:
    run_dir: run with exports and the eval split's agreement table.
    variants: audited plain variant names (e.g. the report's).
    split: the eval split whose twin check counts.
    k: the deployed member.
    mode, max_latency_ratio: see `deploy.choose_encoding`.
    num_threads, batch_sizes, repeats: latency measurement (`latency.measure`).
    log: optional callable(str), one line per variant.

  Returns:
    The written dict: {"schema", "mode", "max_latency_ratio", "split", "k", "batch_sizes",
    "variants": {variant: entry}}; the entry's keys are documented in
    docs/artifacts/predictions.md ("encoding", "reason", "runtime", "size_bytes",
    "size_ratio_to_dense_float32", "latency_s", "latency_ratio", "twin_equal", ...).

  Raises:
    deploy.DeployError: bad mode / bound; evaluate.EvaluationError: missing exports or
      agreement table; interpreter.TfliteError: a file that cannot run.
  """
  deploy.check_encoding_options(mode, max_latency_ratio)
  exports = {(m["variant"], int(m["k"])): m for m in evaluate.list_exports(run_dir)}
  failures = {(f["variant"], int(f["k"])): f["reason"] for f in evaluate.list_failures(run_dir)}
  table_path = layout.agreement(run_dir, split)
  if not fileio.exists(table_path):
    raise evaluate.EvaluationError(f"{table_path} is missing: evaluate the {split} split first")
  agreement = atomic.read_json(table_path)
  dense = exports.get((formats.DENSE, k))
  if dense is None:
    raise evaluate.EvaluationError(f"no dense float32 export of member {k} in {run_dir}")
  dense_size = dense["size_bytes"]["raw"]
  entries = {}
  for name in variants:
    plain = exports.get((name, k))
    if plain is None:
      raise evaluate.EvaluationError(f"no export of variant {name} member {k} in {run_dir}")
    v = formats.parse_variant(name)
    sparse_name = formats.Variant(v.member_variant, v.format, "sparse").name
    sparse = exports.get((sparse_name, k))
    files = {"plain": plain["path"]}
    if sparse is not None and mode != "plain":
      files["sparse"] = sparse["path"]
    timed = latency.measure(files, batch_sizes, num_threads, repeats)
    ratios = ({b: latency.ratio(timed["sparse"], timed["plain"], b) for b in batch_sizes}
              if "sparse" in files else {})
    worst = max(ratios, key=ratios.get) if ratios else batch_sizes[0]
    sparse_in = None
    if sparse is not None or (sparse_name, k) in failures:
      equal, reason = (_twin_check(agreement, sparse_name, k) if sparse is not None
                       else (False, None))
      sparse_in = {"size": sparse["size_bytes"]["raw"] if sparse else None,
                   "latency": timed.get("sparse", {}).get(f"batch_{worst}", {}).get("median_s"),
                   "twin_equal": equal, "twin_reason": reason,
                   "error": failures.get((sparse_name, k))}
    encoding, reason = deploy.choose_encoding(
        {"size": plain["size_bytes"]["raw"],
         "latency": timed["plain"][f"batch_{worst}"]["median_s"]},
        sparse_in, max_latency_ratio, mode)
    chosen = sparse if encoding == "sparse" else plain
    timed_chosen = timed["sparse" if encoding == "sparse" else "plain"]
    entries[name] = {
        "encoding": encoding, "reason": reason, "file_variant": chosen["variant"],
        "runtime": timed_chosen["runtime"], "runtime_fallback": timed_chosen["fallback_reason"],
        "sparsity": plain["sparsity"]["kernels"]["fraction"],
        "size_bytes": {"plain": plain["size_bytes"],
                       "sparse": sparse["size_bytes"] if sparse else None},
        "size_ratio_to_dense_float32": chosen["size_bytes"]["raw"] / dense_size,
        "sparse_to_plain_size": (sparse["size_bytes"]["raw"] / plain["size_bytes"]["raw"]
                                 if sparse else None),
        "latency_s": {e: _medians(t, batch_sizes) for e, t in timed.items()},
        "sparse_runtime": timed.get("sparse", {}).get("runtime"),
        "latency_ratio": ratios.get(worst) if encoding == "sparse" else 1.0,
        "sparse_latency_ratio": {f"batch_{b}": r for b, r in ratios.items()},
        "twin_equal": sparse_in["twin_equal"] if sparse_in else None,
    }
    if log:
      log(f"{name}: {encoding} ({reason})")
  doc = {"schema": SCHEMA, "mode": mode, "max_latency_ratio": max_latency_ratio,
         "split": split, "k": k, "batch_sizes": list(batch_sizes), "num_threads": num_threads,
         "variants": entries}
  atomic.write_json(path(run_dir), doc)
  return doc
