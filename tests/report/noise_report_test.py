"""Noise tables of the report (003 §4.1, §5.1, Definitions 1-2; docs/spec.md §6.6-6.7).

Every expected number below is worked out by hand from the hand-written top-1 labels (see the
comments); the softmax of a prediction is 0.9 on its label and 0.1 on the other class, so two
different labels are sqrt(2 · 0.8²) = 1.1314 apart in L2.
"""

import os

import numpy as np
import pytest

from tf_forget.artifacts import noise_artifact
from tf_forget.report import noise_report
from tf_forget.report import unit
from tf_forget.report.units import noise as noise_unit

LABELS = [0, 1, 0, 1]
EPS = [0.0, 0.5]
# variant -> k -> [level][draw] top-1 labels of the 4 examples.
TOP1 = {
  "dense": {
    0: [[[0, 1, 0, 1]] * 2, [[0, 1, 1, 1], [1, 1, 0, 1]]],  # acc 1, .75
    1: [[[0, 1, 0, 0]] * 2, [[0, 0, 0, 0], [1, 1, 1, 1]]],
  },  # acc .75, .5
  "prune_0.5": {
    0: [[[0, 1, 0, 1]] * 2, [[0, 1, 0, 1]] * 2],  # acc 1, 1
    1: [[[0, 1, 0, 1]] * 2, [[0, 1, 0, 0]] * 2],
  },  # acc 1, .75
  "prune_0.9": {
    0: [[[1, 1, 0, 1]] * 2, [[1, 0, 1, 0]] * 2],  # acc .75, 0
    1: [[[0, 1, 0, 1]] * 2, [[1, 0, 1, 0]] * 2],
  },  # acc 1, 0
}
L2 = np.sqrt(2 * 0.8**2)


def write_run(run_dir, protocol_seed=0, skip=()):
  for variant, members in TOP1.items():
    for k, top1 in members.items():
      if (variant, k) in skip:
        continue
      top1 = np.asarray(top1, np.int32)
      soft = np.where(np.eye(2, dtype=bool)[top1], 0.9, 0.1)
      protocol = {"eps": EPS, "draws": 2, "examples": 4, "seed": protocol_seed}
      noise_artifact.write(
        noise_artifact.path(run_dir, variant, k),
        EPS,
        [10, 11, 12, 13],
        LABELS,
        top1,
        soft,
        {"variant": variant, "k": k, "protocol": protocol, "runtime": "xnnpack"},
      )


@pytest.fixture
def tables(tmp_path):
  write_run(str(tmp_path))
  tables, notes, protocol = noise_report.compute(str(tmp_path), ["dense", "prune_0.5", "prune_0.9"])
  assert protocol["draws"] == 2 and notes == ["runtime paths under noise: xnnpack"]
  return tables


def _row(frame, variant, eps):
  return frame[(frame.variant == variant) & (frame.eps == eps)].iloc[0]


def test_accuracy_change_ratio_and_excess_error(tables):
  t = tables["noise_accuracy"]
  # dense: mean (1 + .75) / 2 = .875 at eps 0, (.75 + .5) / 2 = .625 at eps .5.
  # prune_0.5: 1 and .875; change +.125 / +.25 points; ratio 100 (1/.875 - 1), 100 (.875/.625 - 1).
  r0, r1 = _row(t, "prune_0.5", 0.0), _row(t, "prune_0.5", 0.5)
  assert (r0.top1, r1.top1) == pytest.approx((1.0, 0.875))
  assert (r0.top1_change, r1.top1_change) == pytest.approx((0.125, 0.25))
  assert (r0.top1_norm, r1.top1_norm) == pytest.approx((100 / 7, 40.0))
  assert r1.top1_sd == pytest.approx(np.std([1.0, 0.75], ddof=1))
  # Excess error (003 Def. 2): .125 - 0 for prune_0.5, .375 - .125 = .25 for dense.
  assert r1.excess_error == pytest.approx(0.125)
  assert r1.excess_error_vs_dense == pytest.approx(-0.125)
  assert _row(t, "dense", 0.5).excess_error == pytest.approx(0.25)
  assert list(dict.fromkeys(t.variant)) == ["dense", "prune_0.5", "prune_0.9"]


def test_prune_potential_per_member_then_mean(tables):
  # k=0: dense error (0, .25); prune_0.5 (0, 0) within δ at both; prune_0.9 (.25, 1) at none
  #   -> (.5, .5). k=1: dense (.25, .5); prune_0.5 (0, .25) ok; prune_0.9 (0, 1) ok at eps 0
  #   -> (.9, .5). Mean (.7, .5), SD (ddof 0) (.2, 0).
  t = tables["noise_prune_potential"]
  assert list(t.prune_potential) == pytest.approx([0.7, 0.5])
  assert list(t.prune_potential_sd) == pytest.approx([0.2, 0.0])
  assert set(t.ratios) == {"0.5, 0.9"} and set(t.members) == {2}


def test_similarity_to_dense_member_k_and_the_independent_reference(tables):
  t = tables["noise_similarity"]
  # prune_0.5 vs dense k: k=0 (1, (3/4 + 3/4) / 2), k=1 (3/4, (3/4 + 1/4) / 2)
  # -> mean (.875, .625).
  assert _row(t, "prune_0.5", 0.0).matching == pytest.approx(0.875)
  assert _row(t, "prune_0.5", 0.5).matching == pytest.approx(0.625)
  # L2: k=0 at eps .5 mismatches 2 of 8 (draw, example) pairs, k=1 4 of 8 -> 6/16 · 1.1314.
  assert _row(t, "prune_0.5", 0.5).l2 == pytest.approx(6 / 16 * L2, rel=1e-3)
  # dense 0 vs dense 1 (both orders): .75 at eps 0; (.25 + .75) / 2 at eps .5.
  ind = _row(t, noise_report.INDEPENDENT, 0.5)
  assert ind.pairs == 2 and ind.matching == pytest.approx(0.5)
  assert _row(t, noise_report.INDEPENDENT, 0.0).matching == pytest.approx(0.75)


def test_no_noise_directory_is_a_note(tmp_path):
  tables, notes, protocol = noise_report.compute(str(tmp_path))
  assert tables == {} and protocol is None and "no l-inf noise" in notes[0]


def test_mixed_protocols_and_missing_dense_are_one_line_errors(tmp_path):
  write_run(str(tmp_path))
  write_run(str(tmp_path / "other"), protocol_seed=1)
  os.replace(
    noise_artifact.path(str(tmp_path / "other"), "prune_0.9", 1),
    noise_artifact.path(str(tmp_path), "prune_0.9", 1),
  )
  with pytest.raises(noise_report.NoiseReportError, match="other noise protocol"):
    noise_report.compute(str(tmp_path))
  nodense = tmp_path / "nodense"
  write_run(str(nodense), skip={("dense", 0), ("dense", 1)})
  with pytest.raises(noise_report.NoiseReportError, match="no dense population"):
    noise_report.compute(str(nodense))


def test_section_shows_plot_and_tables(tables):
  body = noise_unit.section(
    tables["noise_accuracy"],
    tables["noise_similarity"],
    tables.get("noise_prune_potential"),
    {"draws": 2, "examples": 4},
    None,
  )
  assert "data:image/png;base64," in body and "4 examples max × 2 draws" in body
  assert body.count("<table class=") == 3
  empty = noise_unit.section(None, None, None, {}, ["no l-inf noise evaluation"])
  assert empty == unit.Skip("no l-inf noise evaluation")


def test_change_intervals_welch_and_paired(tmp_path):
  """By hand: at ε = 0.5 dense members (.75, .5), prune_0.5 (1, .75).
  Welch: difference .25, each sample variance .03125, SE √(2 · .03125 / 2) = .17678, df 2,
  t_{0.975, 2} = 4.303 → ±.7607 (the top clipped at +1).
  Paired by k: differences (.25, .25) → no spread → the point .25."""
  write_run(str(tmp_path))
  welch = noise_report.compute(str(tmp_path), ["dense", "prune_0.5"])[0]["noise_accuracy"]
  r = _row(welch, "prune_0.5", 0.5)
  assert r.top1_change_low == pytest.approx(0.25 - 4.303 * 0.17678, abs=2e-4)
  assert r.top1_change_high == 1.0
  paired = noise_report.compute(
    str(tmp_path), ["dense", "prune_0.5"], pairs={"prune_0.5": [(0, 0), (1, 1)]}
  )[0]["noise_accuracy"]
  r = _row(paired, "prune_0.5", 0.5)
  assert r.top1_change_low == r.top1_change_high == pytest.approx(0.25)
  assert np.isnan(_row(paired, "dense", 0.5).top1_change_low)
