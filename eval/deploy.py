"""The audited deployment bundle and the gates (issue #6): what a user ships, and whether to.

    <out>/deploy/<variant>/<k>.tflite     copies of the audited files (one member, or all)
    <out>/deploy/manifest.json            schema `tf_forget.manifest/1`

The gates (`Gates`, `verdict`) live in `tf_forget/report/gates.py` (the report's verdict block
shows the same verdicts) and are re-exported here. The bundle is written
whole into a temporary directory and renamed (file by file on a URL file system such as gs://,
the manifest last: `fileio.replace_dir`), so a failed run leaves no partial bundle.

Encoding choice (issue #10, `choose_encoding`): per variant, ship the plain file or its
sparse-encoded twin. `auto` ships the sparse file only if its predictions equal its plain
twin's (`eval.agreement.compare_twin_files`), it is at least `MIN_SIZE_SAVING` smaller, and its
median latency is within
`max_latency_ratio` of the plain file's measured in the same run (`eval.latency`); otherwise
the plain file, with a one-line reason.
"""

import dataclasses
import math
import os

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.io import atomic
from tf_forget.report import gates as gates_lib
from tflite_export import export as export_lib
from tflite_export import formats

MANIFEST_SCHEMA = "tf_forget.manifest/1"
ENCODING_MODES = ("auto", "plain", "sparse")
DEFAULT_MAX_LATENCY_RATIO = 1.5
# `auto` ships a sparse twin only if it saves at least 1% of the plain file: on a dense (or
# barely sparse) model the converter's sparse file is the plain one give or take a few bytes
# of metadata, not worth an experimental encoding.
MIN_SIZE_SAVING = 0.01


class DeployError(errors.Error):
  """Bad deployment options or encoding inputs (one line)."""


Gates = gates_lib.Gates
verdict = gates_lib.verdict


def _positive(value):
  return (isinstance(value, (int, float)) and not isinstance(value, bool) and
          math.isfinite(value) and value > 0)


def check_encoding_options(mode, max_latency_ratio):
  """Raises `DeployError` for an unknown deploy encoding or a bound that is not a number > 0."""
  if mode not in ENCODING_MODES:
    raise DeployError(f"unknown deploy encoding {mode!r} (known: {', '.join(ENCODING_MODES)})")
  if not _positive(max_latency_ratio):
    raise DeployError(f"max_latency_ratio must be a finite number > 0, got {max_latency_ratio!r}")


def choose_encoding(plain, sparse, max_latency_ratio=DEFAULT_MAX_LATENCY_RATIO, mode="auto"):
  """Chooses the plain file or its sparse-encoded twin for one variant (issue #10).

  Args:
    plain: {"size": bytes, "latency": median seconds or None} of the plain file.
    sparse: None (no sparse twin), or {"size", "latency", "twin_equal": bool, "twin_reason":
      one-line reason or None, "error": one-line conversion failure or None}.
    max_latency_ratio: the largest sparse / plain median latency `auto` accepts (> 0).
    mode: "auto" (the smallest file whose predictions equal its plain twin's and whose latency
      is within the bound), "plain" (always plain) or "sparse" (sparse whenever it exists and
      equals its twin, whatever its size and latency).

  Returns:
    (encoding "plain" or "sparse", one-line reason).

  Raises:
    DeployError: an unknown mode, a bad bound, or a missing / non-positive plain size.
  """
  check_encoding_options(mode, max_latency_ratio)
  if not _positive((plain or {}).get("size")):
    raise DeployError(f"plain file size must be > 0, got {(plain or {}).get('size')!r}")
  if mode == "plain":
    return "plain", "plain encoding requested"
  if sparse is None:
    return "plain", "no sparse-encoded twin"
  if sparse.get("error"):
    return "plain", f"sparse conversion failed: {sparse['error']}"
  if not sparse.get("twin_equal"):
    return "plain", (sparse.get("twin_reason") or
                     "sparse file not checked against its plain twin")
  if mode == "sparse":
    return "sparse", "sparse encoding requested; predictions equal the plain twin's"
  size_ratio = sparse["size"] / plain["size"]
  if size_ratio >= 1:
    return "plain", f"sparse file is not smaller ({size_ratio:.3f}x the plain size)"
  if size_ratio > 1 - MIN_SIZE_SAVING:
    return "plain", (f"sparse file saves under {100 * MIN_SIZE_SAVING:g}% "
                     f"({size_ratio:.4f}x the plain size)")
  if not (_positive(plain.get("latency")) and _positive(sparse.get("latency"))):
    return "plain", "latency not measured for both files; cannot check the latency bound"
  latency_ratio = sparse["latency"] / plain["latency"]
  if latency_ratio > max_latency_ratio:
    return "plain", (f"sparse file is {latency_ratio:.2f}x slower than plain "
                     f"(max {max_latency_ratio:g}x)")
  return "sparse", (f"sparse file {size_ratio:.3f}x the plain size, latency "
                    f"{latency_ratio:.2f}x (max {max_latency_ratio:g}x), predictions equal")


def write_bundle(run_dir, out_dir, report, gates, members="first", encodings=None):
  """Copies the audited `.tflite` files and writes the manifest with the gate verdicts.

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

  Returns:
    The manifest dict.
  """
  deploy = os.path.join(out_dir, "deploy")
  tmp = deploy + ".tmp"
  fileio.rmtree(tmp)
  entries = []
  dense_sizes = {}
  for variant_name, summary in sorted(report["variants"].items()):
    variant = formats.parse_variant(variant_name)
    passed, reasons = verdict(variant_name, summary, gates)
    ks = sorted(report["inputs"][variant_name][report["dataset"]["eval_split"]]["members"])
    if members == "first":
      ks = ks[:1]
    choice = (encodings or {}).get(variant_name)
    shipped = variant
    if choice and choice.get("encoding", formats.DEFAULT_ENCODING) != variant.encoding:
      shipped = formats.Variant(variant.member_variant, variant.format, choice["encoding"])
    for k in ks:
      src, meta_path = export_lib.export_paths(run_dir, shipped, k)
      meta = atomic.read_json(meta_path)
      rel = os.path.join(variant_name, f"{k}.tflite")
      fileio.copy(src, os.path.join(tmp, rel))
      worst = (summary.get("worst_subgroup") or {}).get("fnr") or {}
      if k not in dense_sizes:
        _, dense_meta = export_lib.export_paths(run_dir, formats.parse_variant(formats.DENSE), k)
        dense_sizes[k] = (atomic.read_json(dense_meta)["size_bytes"]["raw"]
                          if fileio.exists(dense_meta) else None)
      entries.append({
          "variant": variant_name, "k": int(k), "file": rel, "format": meta["format"],
          "encoding": meta["encoding"], "sha256": meta["sha256"],
          "size_bytes": meta["size_bytes"],
          "size_ratio_to_dense_float32": (meta["size_bytes"]["raw"] / dense_sizes[k]
                                          if dense_sizes[k] else None),
          "runtime": (choice or {}).get("runtime"),
          "latency_ratio_to_plain": (choice or {}).get("latency_ratio"),
          "sparsity": meta["sparsity"]["kernels"]["fraction"],
          "top1_accuracy_population": summary.get("top1"),
          "top1_change_vs_dense": summary.get("top1_change"),
          "cie_count": summary.get("pie_count"),
          "significant_classes": summary.get("significant_classes"),
          "worst_subgroup_fnr": worst or None,
          "gate": {"passed": passed, "reasons": reasons},
      })
      if choice is not None:
        entries[-1]["encoding_choice"] = dict(choice)
  manifest = {"schema": MANIFEST_SCHEMA, "dataset": report["dataset"]["name"],
              "gates": dataclasses.asdict(gates), "files": entries,
              "failed_variants": sorted({e["variant"] for e in entries
                                         if not e["gate"]["passed"]})}
  atomic.write_json(os.path.join(tmp, "manifest.json"), manifest)
  fileio.replace_dir(tmp, deploy, last=("manifest.json",))
  return manifest


def print_summary(report, manifest, log=print):
  """Prints the audit's short summary table (the shipped file of each variant) and failed gates.

  Args:
    report: the report dict (`tf_forget.report.write`).
    manifest: the bundle's manifest dict (`write_bundle`).
    log: callable(str) taking each line.
  """
  failed = {e["variant"]: e["gate"]["reasons"] for e in manifest["files"]
            if not e["gate"]["passed"]}
  shipped = {}
  for e in manifest["files"]:
    ratio = e.get("size_ratio_to_dense_float32")
    shipped.setdefault(e["variant"], f"{e['encoding']} {ratio:.3f}x" if ratio else e["encoding"])
  log(f"\n{'variant':<22} {'members':>7} {'top-1':>7} {'change':>7} {'#signif':>7} "
      f"{'#PIE':>6} {'worst FNR +':>11}  {'shipped (size)':<15} gate")
  for variant, s in sorted(report["variants"].items()):
    worst = ((s.get("worst_subgroup") or {}).get("fnr") or {}).get("increase")
    worst = f"{100 * worst:+.1f}pt" if isinstance(worst, float) and worst == worst else "n/a"
    log(f"{variant:<22} {s.get('members', 0):>7} {s.get('top1', float('nan')):>7.4f} "
        f"{100 * s.get('top1_change', 0.0):>+6.2f} {s.get('significant_classes', 0):>7} "
        f"{s.get('pie_count', 0):>6} {worst:>11}  {shipped.get(variant, ''):<15} "
        f"{'FAIL' if variant in failed else 'pass'}")
  log("(shipped size: the bundled file over the dense float32 file)")
  for variant, reasons in sorted(failed.items()):
    for reason in reasons:
      log(f"gate failed: {variant}: {reason}")
