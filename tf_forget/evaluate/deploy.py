"""The audited deployment bundle and the gates: what a user ships, and whether to.

    <out>/deploy/<variant>/<k>.tflite     copies of the audited files (one member, or all)
    <out>/deploy/manifest.json            schema `tf_forget.manifest/1`

The gates (`Gates`, `verdict`) live in `tf_forget/policy/gates.py` (the report's verdict block
shows the same verdicts); each variant's measures go through `gate_inputs.gate_measures`: the
manifest and the gates carry the output divergence of the report (flip rate and mean KL) and,
with one dense member (K = 1), its paired per-example tests, as its verdict does; the audit's
terminal summary of the manifest is `tf_forget.report.summary_terminal`. The bundle is written
whole into a staging directory and swapped in by renames (`swap.swap_in`; file by file on a
URL file system such as gs://, the manifest out first and in last), so a failed or killed run
leaves the previous bundle or the new one, never a mixture.

Encoding choice (`choose_encoding`): per variant, ship the plain file or its
sparse-encoded twin. `auto` ships the sparse file only if its predictions equal its plain twin's
(`tf_forget.evaluate.agreement.compare_twin_files`), it is at least `MIN_SIZE_SAVING` smaller, and
it is not slower than `max_sparse_latency_ratio` beyond the spread of the sparse / plain latency ratio over
interleaved rounds (`tf_forget.evaluate.latency.ratio_interval`: refused only when the interval's
low end exceeds the bound); otherwise the plain file, with a one-line reason.
"""

import dataclasses
import math
import os

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import layout
from tf_forget.artifacts import names
from tf_forget.artifacts import swap
from tf_forget.artifacts import tflite_json
from tf_forget.export import export_state
from tf_forget.policy import gate_inputs
from tf_forget.policy import gates as gates_lib

MANIFEST_SCHEMA = "tf_forget.manifest/1"
BUNDLE = layout.BUNDLE_DIR  # out_dir/deploy
MANIFEST = layout.MANIFEST_FILE  # the bundle's completion marker, written last
ENCODING_MODES = ("auto", "plain", "sparse")
DEFAULT_MAX_SPARSE_LATENCY_RATIO = 1.5
# `auto` ships a sparse twin only if it saves at least 1% of the plain file: on a dense (or
# barely sparse) model the converter's sparse file is the plain one give or take a few bytes
# of metadata, not worth an experimental encoding.
MIN_SIZE_SAVING = 0.01


class DeployError(errors.Error):
  """Bad deployment options or encoding inputs (one line)."""


def _positive(value):
  return (
    isinstance(value, (int, float))
    and not isinstance(value, bool)
    and math.isfinite(value)
    and value > 0
  )


def check_encoding_options(mode, max_sparse_latency_ratio):
  """Raises `DeployError` for an unknown deploy encoding or a bound that is not a number > 0."""
  if mode not in ENCODING_MODES:
    raise DeployError(f"unknown deploy encoding {mode!r} (known: {', '.join(ENCODING_MODES)})")
  if not _positive(max_sparse_latency_ratio):
    raise DeployError(
      f"max_sparse_latency_ratio must be a finite number > 0, got {max_sparse_latency_ratio!r}"
    )


def _latency_ratio(plain, sparse):
  """{"median", "low", "high"} of sparse / plain latency, or None if not measured.

  The paired-round interval `sparse["latency_ratio"]` when given
  (`tf_forget.evaluate.latency.ratio_interval`), else the ratio of the two medians as a point
  interval.
  """
  given = sparse.get("latency_ratio")
  if given is not None:
    values = [given.get(k) for k in ("median", "low", "high")]
    return dict(zip(("median", "low", "high"), values)) if all(map(_positive, values)) else None
  if not (_positive(plain.get("latency")) and _positive(sparse.get("latency"))):
    return None
  r = sparse["latency"] / plain["latency"]
  return {"median": r, "low": r, "high": r}


def choose_encoding(
  plain, sparse, max_sparse_latency_ratio=DEFAULT_MAX_SPARSE_LATENCY_RATIO, mode="auto"
):
  """Chooses the plain file or its sparse-encoded twin for one variant.

  The latency bound refuses a sparse twin only when it is slower beyond the spread of the
  measurement: when the low end of the sparse / plain ratio interval exceeds
  `max_sparse_latency_ratio`. A median over the bound with an interval reaching under it is noise on a
  shared machine, not a slower file; the sparse twin ships and the reason says so.

  Args:
    plain: {"size": bytes, "latency": median seconds or None} of the plain file.
    sparse: None (no sparse twin), or {"size", "latency", "twin_equal": bool, "twin_reason":
      one-line reason or None, "error": one-line conversion failure or None, and optionally
      "latency_ratio": {"median", "low", "high"} of the per-round paired ratios sparse / plain
      (`tf_forget.evaluate.latency.ratio_interval`); without it the two medians' ratio is used
      alone}.
    max_sparse_latency_ratio: the largest sparse / plain latency ratio `auto` accepts (> 0).
    mode: "auto" (the smallest file whose predictions equal its plain twin's and whose latency
      is within the bound), "plain" (always plain) or "sparse" (sparse whenever it exists and
      equals its twin, whatever its size and latency).

  Returns:
    (encoding "plain" or "sparse", one-line reason).

  Raises:
    DeployError: an unknown mode, a bad bound, or a missing / non-positive plain size.
  """
  check_encoding_options(mode, max_sparse_latency_ratio)
  if not _positive((plain or {}).get("size")):
    raise DeployError(f"plain file size must be > 0, got {(plain or {}).get('size')!r}")
  if mode == "plain":
    return "plain", "plain encoding requested"
  if sparse is None:
    return "plain", "no sparse-encoded twin"
  if sparse.get("error"):
    return "plain", f"sparse conversion failed: {sparse['error']}"
  if not sparse.get("twin_equal"):
    return "plain", (sparse.get("twin_reason") or "sparse file not checked against its plain twin")
  if mode == "sparse":
    return "sparse", "sparse encoding requested; predictions equal the plain twin's"
  size_ratio = sparse["size"] / plain["size"]
  if size_ratio >= 1:
    return "plain", f"sparse file is not smaller ({size_ratio:.3f}x the plain size)"
  if size_ratio > 1 - MIN_SIZE_SAVING:
    return "plain", (
      f"sparse file saves under {100 * MIN_SIZE_SAVING:g}% ({size_ratio:.4f}x the plain size)"
    )
  r = _latency_ratio(plain, sparse)
  if r is None:
    return "plain", "latency not measured for both files; cannot check the latency bound"
  bound = f"max {max_sparse_latency_ratio:g}x"
  spread = "" if r["low"] == r["high"] else f"ratio interval {r['low']:.2f}–{r['high']:.2f}x"
  if r["low"] > max_sparse_latency_ratio:
    return "plain", (
      f"sparse file is {r['median']:.2f}x slower than plain "
      f"({spread + ' > ' if spread else ''}{bound})"
    )
  noise = ", over the bound only within noise" if r["median"] > max_sparse_latency_ratio else ""
  return "sparse", (
    f"sparse file {size_ratio:.3f}x the plain size, latency "
    f"{r['median']:.2f}x ({spread + ', ' if spread else ''}{bound}{noise}), "
    "predictions equal"
  )


def _dense_size(run_dir, k, cache):
  """Raw size of member k's dense float32 file (None if not exported), memoized in `cache`."""
  if k not in cache:
    _, meta = export_state.export_paths(run_dir, names.parse_variant(names.DENSE), k)
    cache[k] = tflite_json.read(meta)["size_bytes"]["raw"] if filesystem.exists(meta) else None
  return cache[k]


def _entry(variant_name, k, meta, summary, gate, choice, dense_size):
  """The manifest entry of one shipped file (see `write_bundle`)."""
  worst = (summary.get("worst_subgroup") or {}).get("fnr") or {}
  entry = {
    "variant": variant_name,
    "k": int(k),
    "file": os.path.join(variant_name, f"{k}.tflite"),
    "format": meta["format"],
    "encoding": meta["encoding"],
    "sha256": meta["sha256"],
    "size_bytes": meta["size_bytes"],
    "size_ratio_to_dense_float32": (meta["size_bytes"]["raw"] / dense_size if dense_size else None),
    "runtime": (choice or {}).get("runtime"),
    "latency_ratio_to_plain": (choice or {}).get("latency_ratio"),
    "sparsity": meta["sparsity"]["kernels"]["fraction"],
    "top1_accuracy_population": summary.get("top1"),
    "top1_change_vs_dense": summary.get("top1_change"),
    "cie_count": summary.get("pie_count"),
    "significant_classes": summary.get("significant_classes"),
    "worst_subgroup_fnr": worst or None,
    "flip_rate": summary.get("flip_rate"),
    "kl_mean": summary.get("kl_mean"),
    "gate": {"passed": gate[0], "reasons": gate[1]},
  }
  if choice is not None:
    entry["encoding_choice"] = dict(choice)
  return entry


def _gate_measures(report, variant_name, summary):
  """The variant's measures the gates read (`gate_inputs.gate_measures`)."""
  return gate_inputs.gate_measures(
    variant_name, summary, report.get("settings"), report.get("tables")
  )


def _build(run_dir, bundle, report, gates, members, encodings):
  """Copies the shipped files into the new directory `bundle`, writes its manifest last."""
  entries, dense_sizes = [], {}
  for variant_name, summary in sorted(report["variants"].items()):
    variant = names.parse_variant(variant_name)
    summary = _gate_measures(report, variant_name, summary)
    gate = gates_lib.verdict(variant_name, summary, gates)
    ks = sorted(report["inputs"][variant_name][report["dataset"]["eval_split"]]["members"])
    choice = (encodings or {}).get(variant_name)
    shipped = variant
    if choice and choice.get("encoding", names.DEFAULT_ENCODING) != variant.encoding:
      shipped = names.Variant(variant.member_variant, variant.format, choice["encoding"])
    for k in ks[:1] if members == "first" else ks:
      src, meta_path = export_state.export_paths(run_dir, shipped, k)
      entries.append(
        _entry(
          variant_name,
          k,
          tflite_json.read(meta_path),
          summary,
          gate,
          choice,
          _dense_size(run_dir, k, dense_sizes),
        )
      )
      fileio.copy(src, os.path.join(bundle, entries[-1]["file"]))
  manifest = {
    "schema": MANIFEST_SCHEMA,
    "dataset": report["dataset"]["name"],
    "gates": dataclasses.asdict(gates),
    "files": entries,
    "failed_variants": sorted({e["variant"] for e in entries if not e["gate"]["passed"]}),
  }
  fileio.write_json(os.path.join(bundle, MANIFEST), manifest, strict=True)
  return manifest


def write_bundle(run_dir, out_dir, report, gates, members="first", encodings=None, log=print):
  """Copies the audited `.tflite` files and writes the manifest with the gate verdicts.

  The bundle is built whole in a staging directory `out_dir/deploy.tmp-*`, then swapped in
  (`swap.swap_in`): the old `deploy/` renamed to `deploy.old-*`, the new one renamed to
  `deploy/`, the old one removed; what a killed earlier swap left is restored or removed
  first. A reader sees the old bundle or the new one, never a mixture. The manifest is strict
  JSON (NaN and infinities as null).

  Args:
    run_dir: the run directory with `tflite/` exports.
    out_dir: the audit output directory; the bundle goes to `out_dir/deploy`.
    report: the report.json dict (`tf_forget.report.write`).
    gates: `Gates`.
    members: "first" (member 0 of each variant: the one a user ships) or "all".
    encodings: optional {variant name: {"encoding": "plain" | "sparse", "reason": str, ...}}
      (e.g. from `choose_encoding`, plus runtime / ratios to record); a variant mapped to
      "sparse" ships its sparse-encoded twin, and the dict is recorded as the entry's
      `encoding_choice` (its `runtime` and `latency_ratio` also as the entry's `runtime` and
      `latency_ratio_to_plain`). None (default): every variant ships as reported.
    log: callable(str) for one-line warnings (an old bundle that could not be removed: the new
      one stands).

  Returns:
    The manifest dict.

  Raises:
    errors.WriteError: the bundle cannot be written or swapped in; the previous bundle, if
      any, is then left as it was.
  """
  notes = swap.clean_staging(out_dir, BUNDLE, (BUNDLE,), (MANIFEST,))
  with swap.staging(out_dir, BUNDLE) as tmp:
    manifest = _build(run_dir, os.path.join(tmp, BUNDLE), report, gates, members, encodings)
    notes += swap.swap_in(tmp, (BUNDLE,), (MANIFEST,), record=True)
  for note in notes:
    log(f"warning: {note} (the new bundle is in place)")
  return manifest
