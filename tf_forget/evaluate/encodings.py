"""Per-variant choice of the shipped encoding, plain or sparse, with sizes and latencies.

    <run>/eval/encodings.json     `tf_forget.artifacts.encodings` (docs/artifacts/predictions.md)

For every audited (plain) variant, the deployed member k (0 by default) is looked at with its
sparse-encoded twin (`tflite_export`, docs/spec.md §1.1 names): the twin check on the eval split
(`tf_forget.evaluate.population_eval` writes it into `eval/agreement/<split>.json`; a failed sparse
conversion is there too), the raw / gzip sizes from the export JSON, and the latency of both files
at batch 1 and the user's batch (`--latency_batch`) with the interpreter threads of the audit
(`tf_forget.evaluate.latency`, as on a device: XNNPACK, else the built-in kernels). Every file
to time — each variant's plain and sparse files and the dense float32 file of the same member,
the float reference — is timed once, all interleaved in the same rounds of fresh interpreters
(`_time_together`), so that each ratio (sparse / plain, file / reference) is paired by round:
`latency_vs_reference` is the per-round ratios' median and interquartile range; the rounds stop
once those are known to `latency.DEFAULT_PRECISION` (`latency.measure`). The chosen
file's ops delegated to XNNPACK and the deployment targets that run it are recorded too
(`tf_forget.evaluate.targets.describe`). `deploy.choose_encoding` then decides. The latency
bound is checked at the batch size where the sparse file fares worst (the highest low end of its
ratio interval), on the interval of the per-round paired ratios sparse / plain (a single median
can move 2x between identical runs on a shared machine). The entry records the runtime path of
the chosen file, its size relative to the dense float32 file of the same member k, the latency
ratio to the plain file (1 when plain is shipped) and the ratio intervals.

Re-runs: an entry records its `inputs` — the sha256 of the plain, sparse and reference bytes
timed, the twin check and the settings that decide (`_settings`) — and is reused as it is, with
nothing timed, while they are unchanged; otherwise it is measured again with a
`redo <variant> encoding: <why>` line. `remeasure=True` times every variant afresh.
"""

import dataclasses

from tf_forget.artifacts import agreement_table
from tf_forget.artifacts import encodings as encodings_file
from tf_forget.artifacts import errors
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import hashing
from tf_forget.artifacts import names
from tf_forget.evaluate import deploy
from tf_forget.evaluate import evaluate
from tf_forget.evaluate import interpreter
from tf_forget.evaluate import latency
from tf_forget.evaluate import targets as targets_lib

DEFAULT_REPEATS = latency.DEFAULT_REPEATS
DEFAULT_BLOCK = latency.DEFAULT_BLOCK


def _medians(result, batch_sizes):
  return {f"batch_{b}": result[f"batch_{b}"]["median_s"] for b in batch_sizes}


def _twin_check(agreement, sparse_name, k):
  """(equal, reason) of the sparse file's twin check on the eval split."""
  for row in agreement.get("rows", []):
    if row["variant"] == sparse_name and int(row["k"]) == k:
      check = row.get("vs_plain_twin") or {}
      return bool(check.get("equal")), check.get("reason")
  return False, "sparse file not evaluated against its plain twin"


def _settings(mode, max_sparse_latency_ratio, num_threads, batch_sizes, repeats, block):
  """The settings a recorded decision depends on, JSON-ready."""
  return {
    "mode": mode,
    "max_sparse_latency_ratio": max_sparse_latency_ratio,
    "num_threads": num_threads,
    "batch_sizes": list(batch_sizes),
    "repeats": repeats,
    "block": block,
    "coverage": latency.DEFAULT_COVERAGE,
    "min_rounds": latency.DEFAULT_MIN_ROUNDS,
    "precision": latency.DEFAULT_PRECISION,
  }


def _recorded(run_dir, log):
  """{variant: entry} of the encodings.json on disk; {} if there is none or it is unreadable."""
  path = encodings_file.path(run_dir)
  if not filesystem.exists(path):
    return {}
  try:
    doc = encodings_file.read(path)
  except errors.ReadError as e:
    if log:
      log(f"redo encodings: {errors.one_line(e, 200)}")
    return {}
  return doc.get("variants", {})


def _why_stale(entry, inputs):
  """Why a recorded entry cannot be reused for `inputs` (one line), or None if it can."""
  rec = (entry or {}).get("inputs")
  if not rec:
    return "no recorded inputs (written by an older version)"
  if rec.get("plain_sha256") != inputs["plain_sha256"]:
    return "its plain file changed since it was timed"
  if rec.get("sparse_sha256") != inputs["sparse_sha256"]:
    return "its sparse twin changed since it was timed"
  if rec.get("reference_sha256") != inputs["reference_sha256"]:
    return "the float reference it was timed against changed"
  if rec.get("twin_check") != inputs["twin_check"]:
    return "its sparse twin's check changed"
  old, new = rec.get("settings") or {}, inputs["settings"]
  changed = [
    f"{key} {old.get(key)!r} -> {value!r}" for key, value in new.items() if old.get(key) != value
  ]
  return f"settings changed ({', '.join(changed)})" if changed else None


def _interval(timed, batch_sizes):
  """{batch: latency.ratio_interval of sparse / plain}, {} when no sparse file was timed."""
  if "sparse" not in timed:
    return {}
  return {
    b: latency.ratio_interval(latency.paired_ratios(timed["sparse"], timed["plain"], b))
    for b in batch_sizes
  }


def _vs_reference(timed, encoding, batch_sizes):
  """{batch_<b>: latency.ratio_interval of the chosen file over the float reference}, timed in
  the same rounds; {} without a reference (the dense file itself)."""
  if "reference" not in timed:
    return {}
  return {
    f"batch_{b}": latency.ratio_interval(
      latency.paired_ratios(timed[encoding], timed["reference"], b)
    )
    for b in batch_sizes
  }


def _measure(plain, sparse, sparse_in, timed, settings, dense_size):
  """A fresh entry of one variant from its files' timings (`timed`: {"plain", "sparse",
  "reference"} of `latency.measure`, the float reference in the same rounds), `deploy`
  deciding the encoding."""
  batch_sizes = settings["batch_sizes"]
  intervals = _interval(timed, batch_sizes)
  worst = (
    max(intervals, key=lambda b: (intervals[b]["low"], intervals[b]["median"]))
    if intervals
    else batch_sizes[0]
  )
  if sparse_in is not None:
    sparse_in = dict(
      sparse_in,
      latency_ratio=intervals.get(worst),
      latency=timed.get("sparse", {}).get(f"batch_{worst}", {}).get("median_s"),
    )
  encoding, reason = deploy.choose_encoding(
    {"size": plain["size_bytes"]["raw"], "latency": timed["plain"][f"batch_{worst}"]["median_s"]},
    sparse_in,
    settings["max_sparse_latency_ratio"],
    settings["mode"],
  )
  chosen = sparse if encoding == "sparse" else plain
  timed_chosen = timed[encoding]
  check = dict(intervals[worst], batch_size=worst) if intervals else None
  return {
    "encoding": encoding,
    "reason": reason,
    "file_variant": chosen["variant"],
    "runtime": timed_chosen["runtime"],
    "runtime_fallback": timed_chosen["fallback_reason"],
    "sparsity": plain["sparsity"]["kernels"]["fraction"],
    "size_bytes": {
      "plain": plain["size_bytes"],
      "sparse": sparse["size_bytes"] if sparse else None,
    },
    "size_ratio_to_dense_float32": chosen["size_bytes"]["raw"] / dense_size,
    "sparse_to_plain_size": (
      sparse["size_bytes"]["raw"] / plain["size_bytes"]["raw"] if sparse else None
    ),
    "latency_s": {e: _medians(t, batch_sizes) for e, t in timed.items() if e != "reference"},
    "latency_vs_reference": _vs_reference(timed, encoding, batch_sizes),
    "sparse_runtime": timed.get("sparse", {}).get("runtime"),
    "latency_ratio": check["median"] if encoding == "sparse" else 1.0,
    "sparse_latency_ratio": {f"batch_{b}": i["median"] for b, i in intervals.items()},
    "sparse_latency_interval": {f"batch_{b}": i for b, i in intervals.items()},
    "latency_check": check,
    "twin_equal": sparse_in["twin_equal"] if sparse_in else None,
  }


@dataclasses.dataclass(frozen=True)
class _Inputs:
  """What `choose` read once for every variant."""

  run_dir: str
  exports: dict  # (variant, k) -> export JSON with "path"
  failures: dict  # (variant, k) -> failed sparse conversion reason
  agreement: dict  # the eval split's agreement table
  k: int
  settings: dict
  dense_size: int
  dense_bytes: bytes


def _files(run, name):
  """(plain export, sparse export or None, sparse twin's `choose_encoding` input or None)."""
  plain = run.exports.get((name, run.k))
  if plain is None:
    raise evaluate.EvaluationError(f"no export of variant {name} member {run.k} in {run.run_dir}")
  v = names.parse_variant(name)
  sparse_name = names.Variant(v.member_variant, v.format, "sparse").name
  sparse = run.exports.get((sparse_name, run.k))
  if sparse is None and (sparse_name, run.k) not in run.failures:
    return plain, None, None
  equal, reason = (
    _twin_check(run.agreement, sparse_name, run.k) if sparse is not None else (False, None)
  )
  return (
    plain,
    sparse,
    {
      "size": sparse["size_bytes"]["raw"] if sparse else None,
      "twin_equal": equal,
      "twin_reason": reason,
      "error": run.failures.get((sparse_name, run.k)),
    },
  )


@dataclasses.dataclass(frozen=True)
class _Plan:
  """One variant's files, the inputs its entry records, and why it is timed (None: reused)."""

  files: tuple  # (plain export, sparse export or None, sparse twin's input or None)
  data: dict  # {"plain", "sparse"?: bytes}: the bytes hashed are the bytes timed
  inputs: dict
  why: object


def _plan(run, name, recorded, remeasure):
  """The `_Plan` of one variant: its recorded entry is reused while its inputs hold."""
  plain, sparse, sparse_in = _files(run, name)
  data = {"plain": interpreter.read_model(plain["path"])}
  if sparse is not None and run.settings["mode"] != "plain":
    data["sparse"] = interpreter.read_model(sparse["path"])
  reference = None if name == names.DENSE else run.dense_bytes
  inputs = {
    "plain_sha256": hashing.sha256_bytes(data["plain"]),
    "sparse_sha256": hashing.sha256_bytes(data["sparse"]) if "sparse" in data else None,
    "reference_sha256": hashing.sha256_bytes(reference) if reference else None,
    "twin_check": (
      {key: sparse_in[key] for key in ("twin_equal", "twin_reason", "error")} if sparse_in else None
    ),
    "settings": run.settings,
  }
  why = (
    "missing"
    if name not in recorded
    else "re-measure requested"
    if remeasure
    else _why_stale(recorded[name], inputs)
  )
  return _Plan((plain, sparse, sparse_in), data, inputs, why)


def _time_together(run, plans):
  """{variant: {"plain", "sparse"?, "reference"?: `latency.measure` result}} of the variants to
  time, every file and the float reference (the dense file) interleaved in the same rounds: each
  file is timed once, and each ratio to the reference is paired by round."""
  models = {"reference": run.dense_bytes}
  for name, plan in plans.items():
    for enc, data in plan.data.items():
      if not (name == names.DENSE and enc == "plain"):  # the dense file is the reference
        models[f"{name}\t{enc}"] = data
  s = run.settings
  timed = latency.measure(
    models,
    s["batch_sizes"],
    s["num_threads"],
    s["repeats"],
    block=s["block"],
    reference="reference",
    precision=s["precision"],
    min_rounds=s["min_rounds"],
  )
  out = {}
  for name, plan in plans.items():
    mine = {enc: timed[f"{name}\t{enc}"] for enc in plan.data if f"{name}\t{enc}" in timed}
    if name == names.DENSE:
      mine["plain"] = timed["reference"]
    else:
      mine["reference"] = timed["reference"]
    out[name] = mine
  return out


def _reused(run, entry):
  """A recorded entry as it is (sizes are not timings: the dense file's is read anew)."""
  size = (
    entry["size_bytes"]["sparse"] if entry["encoding"] == "sparse" else entry["size_bytes"]["plain"]
  )["raw"]
  return dict(entry, size_ratio_to_dense_float32=size / run.dense_size)


def _read_inputs(run_dir, split, k, settings):
  """`_Inputs` of a run; raises `evaluate.EvaluationError` for what is missing."""
  exports = {(m["variant"], int(m["k"])): m for m in evaluate.list_exports(run_dir)}
  failures = {(f["variant"], int(f["k"])): f["reason"] for f in evaluate.list_failures(run_dir)}
  table_path = agreement_table.path(run_dir, split)
  if not filesystem.exists(table_path):
    raise evaluate.EvaluationError(f"{table_path} is missing: evaluate the {split} split first")
  dense = exports.get((names.DENSE, k))
  if dense is None:
    raise evaluate.EvaluationError(f"no dense float32 export of member {k} in {run_dir}")
  return _Inputs(
    run_dir,
    exports,
    failures,
    agreement_table.read(table_path),
    k,
    settings,
    dense["size_bytes"]["raw"],
    interpreter.read_model(dense["path"]),
  )


def choose(
  run_dir,
  variants,
  split,
  k=0,
  mode="auto",
  max_sparse_latency_ratio=deploy.DEFAULT_MAX_SPARSE_LATENCY_RATIO,
  num_threads=2,
  batch_sizes=latency.DEFAULT_BATCH_SIZES,
  repeats=DEFAULT_REPEATS,
  block=DEFAULT_BLOCK,
  remeasure=False,
  log=None,
):
  """Chooses plain or sparse for each variant and writes `eval/encodings.json`.

  Args:
    run_dir: run with exports and the eval split's agreement table.
    variants: audited plain variant names (e.g. the report's).
    split: the eval split whose twin check counts.
    k: the deployed member.
    mode, max_sparse_latency_ratio: see `deploy.choose_encoding`.
    num_threads, batch_sizes, repeats, block: latency measurement (`latency.measure`; repeats
      / block rounds of fresh interpreters).
    remeasure: time every variant again even where a recorded decision still holds.
    log: optional callable(str), one line per variant ("<variant>: <encoding> (<reason>)",
      "... [recorded]" when reused) and a "redo <variant> encoding: <why>" line before one
      measured again.

  Returns:
    The written dict: {"schema", "mode", "max_sparse_latency_ratio", "split", "k", "batch_sizes",
    "num_threads", "repeats", "block", "coverage", "min_rounds", "precision", "variants":
    {variant: entry}}; the entry's keys are documented in docs/artifacts/predictions.md
    ("encoding", "reason", "runtime", "size_bytes", "size_ratio_to_dense_float32", "latency_s",
    "latency_ratio", "sparse_latency_interval", "latency_check", "twin_equal", "inputs", ...).

  Raises:
    deploy.DeployError: bad mode / bound; evaluate.EvaluationError: missing exports or
      agreement table; interpreter.TfliteError: a file that cannot be read or run;
      latency.LatencyError: bad measurement options.
  """
  deploy.check_encoding_options(mode, max_sparse_latency_ratio)
  settings = _settings(mode, max_sparse_latency_ratio, num_threads, batch_sizes, repeats, block)
  run = _read_inputs(run_dir, split, k, settings)
  recorded = _recorded(run_dir, log)
  plans = {name: _plan(run, name, recorded, remeasure) for name in variants}
  todo = {name: plan for name, plan in plans.items() if plan.why is not None}
  for name, plan in todo.items():
    if log and plan.why != "missing":
      log(f"redo {name} encoding: {plan.why}")
  timed = _time_together(run, todo) if todo else {}
  entries = {}
  for name, plan in plans.items():
    if name in todo:
      entry = _measure(*plan.files, timed[name], run.settings, run.dense_size)
      entry.update(targets_lib.describe(plan.data[entry["encoding"]], num_threads))
      entries[name] = dict(entry, inputs=plan.inputs)
    else:
      entries[name] = _reused(run, recorded[name])
    if log:
      log(
        f"{name}: {entries[name]['encoding']} ({entries[name]['reason']})"
        + ("" if name in todo else " [recorded]")
      )
  return encodings_file.write(
    encodings_file.path(run_dir), dict({"split": split, "k": k}, **settings, variants=entries)
  )
