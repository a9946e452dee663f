"""The audit's summary in the terminal, after the bundle: one row per variant, then the verdict.

`print_summary(report, manifest)` prints the short table (the shipped file of each variant,
the ship rule's verdict and, when a gate is set, the gate column), every failed gate with its
reason, and the verdict's first screen (`first_screen`: the file to ship and why, what the
choice gives up, the user's own files, the caveats). The numbers are those the gates read
(`tf_forget.policy.gate_inputs.gate_measures`); the manifest is the bundle's
(`tf_forget.evaluate.deploy`).
"""

import math

from tf_forget.policy import gate_inputs
from tf_forget.report import side_by_side
from tf_forget.report import unlabelled_audit
from tf_forget.report import user_verdict
from tf_forget.report.words import folding
from tf_forget.report.words import quantities
from tf_forget.report.words import summaries


def _number(value, spec, scale=1, unit=""):
  """`scale * value` formatted with `spec` plus `unit`, or "n/a" if None or not finite."""
  if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)):
    return "n/a"
  return format(scale * value, spec) + unit


def print_summary(report, manifest, log=print):
  """Prints the audit's short summary table (the shipped file of each variant, the ship rule's
  verdict, and the gate column only when a gate is set), the failed gates and the verdict's first
  screen (`first_screen`).

  Args:
    report: the report dict (`tf_forget.report.write`).
    manifest: the bundle's manifest dict (`tf_forget.evaluate.deploy.write_bundle`).
    log: callable(str) taking each line.
  """
  if unlabelled_audit.is_unlabelled(report):  # no accuracy to show: the flips (spec §8.9)
    for line in unlabelled_audit.summary_lines(report, manifest):
      log(line)
    for line in first_screen(report.get("recommendation") or {}):
      log(line)
    return
  failed = {
    e["variant"]: e["gate"]["reasons"] for e in manifest["files"] if not e["gate"]["passed"]
  }
  gated = any(v is not None for v in (manifest.get("gates") or {}).values())
  ship = {
    r["variant"]: r.get("verdict") or "" for r in (report.get("tables") or {}).get("verdict") or []
  }
  shipped = {}
  for e in manifest["files"]:
    ratio = e.get("size_ratio_to_dense_float32")
    shipped.setdefault(e["variant"], f"{e['encoding']} {ratio:.3f}x" if ratio else e["encoding"])
  bound = (manifest.get("gates") or {}).get("max_flip_rate")
  log(
    f"\n{'variant':<22} {'members':>7} {'top-1':>7} {'change':>7} {'#signif':>7} "
    f"{'#PIE':>6} {'worst FNR +':>11} {'flips':>7} {'KL':>8}  {'shipped (size)':<15} "
    f"{'verdict':<14}" + (" gate" if gated else "")
  )
  for variant in _users_first(report["variants"]):
    s = gate_inputs.gate_measures(  # what the gates read
      variant, report["variants"][variant], report.get("settings"), report.get("tables")
    )
    worst = ((s.get("worst_subgroup") or {}).get("fnr") or {}).get("increase")
    worst = _number(worst, "+.1f", 100, "pt")
    log(
      f"{variant:<22} {s.get('members', 0):>7} {_number(s.get('top1'), '.4f'):>7} "
      f"{_number(s.get('top1_change'), '+.2f', 100):>6} "
      f"{_number(s.get('significant_classes'), 'd'):>7} {_number(s.get('pie_count'), 'd'):>6} "
      f"{worst:>11} {_flip_rate(s.get('flip_rate'), bound):>7} "
      f"{_number(s.get('kl_mean'), '.2e'):>8}  {shipped.get(variant, ''):<15} "
      f"{ship.get(variant, ''):<14}"
      + (f" {'FAIL' if variant in failed else 'pass'}" if gated else "")
    )
  log(summaries.terminal_legend(gated))
  for variant, reasons in sorted(failed.items()):
    for reason in reasons:
      log(f"gate failed: {variant}: {reason}")
  for line in side_by_side.summary_lines(report):  # --deployment_images (spec §8.11)
    log(line)
  for line in first_screen(report.get("recommendation") or {}):
    log(line)


def first_screen(rec):
  """The verdict's first screen as terminal lines: the file to ship and why, the choice's
  trade-offs, your files, the caveats (folded: a repeated caveat once, with its count)."""
  if not rec.get("variant"):
    return []
  out = [f"\nrecommended: {rec['file']} — {rec.get('why', '')}"]
  if rec.get("front_note"):
    out.append(f"  {rec['front_note']}")
  out += [f"  {line}" for line in rec.get("gives_up", [])]
  if rec.get("size_note"):
    out.append(f"  {rec['size_note']}")
  out += [f"  {line}" for line in rec.get("users", [])]
  out += [f"  caveat: {line}" for line in folding.fold(rec.get("caveats", []))]
  return out


def _users_first(variants):
  """Variant names, the user's files (`user_<NAME>`) first, then the others sorted."""
  return sorted(variants, key=lambda v: (not user_verdict.is_user(v), v))


def _flip_rate(rate, bound):
  """A flip rate with the digits its gate needs (`quantities.rate`), "n/a" if undefined."""
  return quantities.rate(rate, bound=bound) if isinstance(rate, (int, float)) else "n/a"
