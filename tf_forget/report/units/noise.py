"""l-inf noise (003 §4.1, §5; docs/spec.md §6.7): accuracy, prune potential and similarity of
every exported file under U(−ε, ε) noise (`noise_report`, from `noise/`). Its notes key is
always present.
"""

from tf_forget.artifacts import names
from tf_forget.report import html
from tf_forget.report import noise_report
from tf_forget.report import pairing as pairing_lib
from tf_forget.report import plots
from tf_forget.report import unit

TABLES = ("noise_accuracy", "noise_similarity", "noise_prune_potential")


def _compute(run, run_dir):
  pairs = {
    v: run.pairing_of(v)["pairs"]
    for v in run.variants
    if v != names.DENSE and pairing_lib.is_paired(run, v)
  }
  tables, notes, protocol = noise_report.compute(run_dir, run.variants, pairs)
  return unit.Part(tables, {"noise": notes}, {"noise": protocol})


def section(acc, sim, pp, protocol, notes):
  """The l-inf noise section (003 §4.1, §5).

  Args:
    acc, sim, pp: the `noise_accuracy` (None: no noise evaluated), `noise_similarity` and
      `noise_prune_potential` (None without pruned levels) tables.
    protocol: the `noise` settings.
    notes: the `noise` notes.
  """
  if acc is None:
    return unit.Skip.of(notes)
  lead = (
    "<p class=\"lead\">U(−ε, ε) noise added to the normalized input of every "
    f"exported file ({protocol.get('examples', '?')} examples max × "
    f"{protocol.get('draws', '?')} draws, the same draws for every file; 003 §4.1, "
    "docs/spec.md §6.7). top1_change is in points with its 95% interval over members (low / "
    "high; paired for the same network, else Welch), beside the ratio to dense (top1_norm); "
    "excess error is error at ε minus error at ε = 0 (003 Definition 2), _vs_dense its "
    "excess over dense's. Prune potential: the largest pruned level whose error stays "
    "within 0.5 points of dense's at the same ε (003 Definition 1). Similarity: member k "
    "against dense member k on the same noisy inputs; the dotted black line compares two "
    "separately trained dense members.</p>"
  )
  numbers = html.table(
    acc,
    {
      "members": "int",
      "top1": html.PCT,
      "top1_sd": html.PCT,
      "top1_change": html.PTS_ABS,
      "top1_change_low": html.PTS_ABS,
      "top1_change_high": html.PTS_ABS,
      "top1_norm": html.PTS,
      "excess_error": html.PCT,
      "excess_error_vs_dense": html.PCT,
    },
    max_rows=60,
  )
  numbers += html.table(
    sim, {"pairs": "int", "matching": html.PCT, "matching_sd": html.PCT}, max_rows=60
  )
  if pp is not None:
    numbers += html.table(
      pp, {"members": "int", "prune_potential": html.PCT, "prune_potential_sd": html.PCT}
    )
  return lead + html.pair(
    plots.noise(acc, sim, pp), "accuracy and similarity under noise", numbers, stacked=True
  )


def _render(noise_accuracy, noise_similarity, noise_prune_potential, settings, notes):
  return section(
    noise_accuracy,
    noise_similarity,
    noise_prune_potential,
    settings.get("noise") or {},
    notes.get("noise"),
  )


UNIT = unit.Unit(
  "noise",
  reads=("run", "run_dir"),
  makes=TABLES,
  compute=_compute,
  sections=(
    unit.Section(
      "noise",
      "7. l-inf noise: accuracy, prune potential, similarity (003 §4.1, §5)",
      "7 Noise",
      TABLES + ("settings", "notes"),
      _render,
    ),
  ),
)
