"""l-inf noise (003 §4.1, §5; docs/spec.md §6.7): accuracy, prune potential and similarity of
every exported file under U(−ε, ε) noise (`noise_report`, from `noise/`). Its notes key is
always present.
"""

from tf_forget.artifacts import names
from tf_forget.report import noise_report
from tf_forget.report import pairing as pairing_lib
from tf_forget.report import sections
from tf_forget.report import unit

TABLES = ("noise_accuracy", "noise_similarity", "noise_prune_potential")


def _compute(run, run_dir):
  pairs = {v: run.pairing_of(v)["pairs"] for v in run.variants
           if v != names.DENSE and pairing_lib.is_paired(run, v)}
  tables, notes, protocol = noise_report.compute(run_dir, run.variants, pairs)
  return unit.Part(tables, {"noise": notes}, {"noise": protocol})


def _render(noise_accuracy, noise_similarity, noise_prune_potential, settings, notes):
  return sections.noise(noise_accuracy, noise_similarity, noise_prune_potential,
                        settings.get("noise") or {}, notes.get("noise"))


UNIT = unit.Unit(
    "noise", reads=("run", "run_dir"), makes=TABLES, compute=_compute,
    sections=(unit.Section("noise",
                           "7. l-inf noise: accuracy, prune potential, similarity (003 §4.1, §5)",
                           "7 Noise", TABLES + ("settings", "notes"), _render),))
