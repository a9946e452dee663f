"""measures: the planted effects of tests/report/fake_run.py are found exactly; small K.

Golden values come from the fixture's construction (its docstring), not from the code under
test: prune_0.9 loses 20 examples of class 3 (recall -0.4) and gains 4 examples in each of
classes 5-9 (+0.08), so #PIE = 40, the significant classes are {3, 5, ..., 9} and the 40
Taxicab CIEs at distance 2K are exactly those examples; full_int8 equals dense.
"""

import numpy as np
import pytest

from tests.report import fake_run
from tf_forget.report import collect
from tf_forget.report.units import registry


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("digits"))
  ids, labels, lost, gained = fake_run.make_digits_run(run_dir, members=5)
  run = collect.load_run(run_dir)
  return run, registry.core(run, seed=0), lost, gained


@pytest.fixture(scope="module")
def biased(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("biased"))
  ids, labels, attributes, planted = fake_run.make_biased_run(run_dir, members=5)
  run = collect.load_run(run_dir)
  return run, registry.core(run), attributes, planted


def test_topline(digits):
  run, m, _, _ = digits
  t = m.tables["topline"].set_index(["variant", "metric"])
  # Dense member k is wrong on the 10 noise positions (i % 50 == k) and the 20 gained ones.
  assert t.loc[("dense", "top1"), "mean"] == pytest.approx(1 - 30 / 500)
  assert t.loc[("prune_0.9", "top1"), "change"] == pytest.approx(0.0)
  assert ("dense", "top5") in t.index  # 10 classes > 5


def test_planted_pie_and_classes(digits):
  _, m, lost, gained = digits
  pie = m.tables["pie"].set_index("variant")
  assert pie.loc["prune_0.9", "pie_count"] == 40
  assert pie.loc["full_int8", "pie_count"] == 0
  cls = m.tables["class_level"]
  sig = cls[(cls.variant == "prune_0.9") & cls.significant]["class"].tolist()
  assert sorted(sig) == [3, 5, 6, 7, 8, 9]
  assert not cls[cls.variant == "full_int8"].significant.any()
  s = m.variants["prune_0.9"]
  assert (s["significant_classes"], s["gained"], s["lost"]) == (6, 5, 1)
  assert s["mean_loss"] == pytest.approx(-0.4) and s["mean_gain"] == pytest.approx(0.08)
  row = cls[(cls.variant == "prune_0.9") & (cls["class"] == 3)].iloc[0]
  assert row.absolute_recall_difference == pytest.approx(-0.4)
  acc = m.tables["pie_accuracy"]
  on_pie = acc[(acc.variant == "prune_0.9") & (acc.subset == "pie")].set_index("population")
  # Dense is right on the 20 lost and wrong on the 20 gained; prune_0.9 the other way round.
  assert on_pie.loc["dense", "top1"] == pytest.approx(0.5)
  assert on_pie.loc["compressed", "top1"] == pytest.approx(0.5)


def test_taxicab_top_cies_are_the_planted_examples(digits):
  _, m, lost, gained = digits
  c = m.cie["prune_0.9"]
  assert set(c["order"][:40].tolist()) == set(lost) | set(gained)
  assert (c["distance"][c["order"][:40]] == 10).all()
  assert (c["distance"][c["order"][40:]] == 0).all()
  assert (c["distance"] == 0).sum() == 460
  assert (m.cie["full_int8"]["distance"] == 0).all()


def test_robustness_normalized_to_dense(digits):
  _, m, _, _ = digits
  t = m.tables["robustness"].set_index("variant")

  # Member k of `variant` is wrong on the first int(rate * 500) + k examples (fake_run).
  def expected(rate):
    return np.mean([1 - (int(rate * s * 500) + k) / 500 for s in range(1, 6) for k in range(5)])

  assert t.loc["dense", "top1"] == pytest.approx(expected(0.1))
  assert t.loc["prune_0.9", "top1"] == pytest.approx(expected(0.12))
  assert t.loc["prune_0.9", "top1_norm"] == pytest.approx(
    100 * (expected(0.12) / expected(0.1) - 1)
  )
  assert "full_int8" not in t.index  # no corrupted predictions for it
  assert any("full_int8" in n for n in m.notes["robustness"])


def test_no_subgroups_without_protected_attributes(digits):
  _, m, _, _ = digits
  assert "subgroups" not in m.tables and "over_indexing" not in m.tables
  assert "no protected attributes" in m.notes["subgroups"][0]


def test_planted_subgroup_loses_most(biased):
  run, m, attributes, planted = biased
  t = m.tables["subgroups"]
  nd = t[(t.variant == "prune_0.9") & (t.model == "compressed") & (t.metric == "fnr")]
  assert nd["Inverted=1"].iloc[0] == pytest.approx(1.0)  # every inverted positive missed
  base = t[(t.variant == "prune_0.9") & (t.model == "normalized_difference") & (t.metric == "fnr")]
  assert base["Inverted=0"].iloc[0] == pytest.approx(0.0)
  assert base["Inverted=0&Faint=1"].iloc[0] == pytest.approx(0.0)
  worst = m.variants["prune_0.9"]["worst_subgroup"]["fnr"]
  assert worst["subgroup"].startswith("Inverted=1")
  assert worst["compressed"] == pytest.approx(1.0)
  assert m.variants["full_int8"]["worst_subgroup"]["fnr"]["increase"] == 0.0
  # The absolute difference (points) beside 004's ratio: every inverted positive is missed
  # under prune_0.9, so its FNR rises by 1 - its baseline FNR.
  cell = {
    model: t[(t.variant == "prune_0.9") & (t.model == model) & (t.metric == "fnr")][
      "Inverted=1"
    ].iloc[0]
    for model in ("baseline", "compressed", "absolute_difference")
  }
  assert cell["absolute_difference"] == pytest.approx(1.0 - cell["baseline"])
  assert worst["increase"] == pytest.approx(
    t[(t.variant == "prune_0.9") & (t.model == "absolute_difference") & (t.metric == "fnr")][
      worst["subgroup"]
    ].iloc[0]
  )
  assert m.variants["prune_0.9"]["pie_count"] == planted.size
  over = m.tables["over_indexing"].set_index(["variant", "attribute"])
  # Every Taxicab CIE at p80 with d > 0 is an inverted positive: Inverted over-indexes.
  assert over.loc[("prune_0.9", "Inverted"), "relative_representation"] > 1.5


@pytest.mark.parametrize("members", [1, 2, 3])
def test_small_populations_never_crash(tmp_path, members):
  fake_run.make_biased_run(str(tmp_path), members=members)
  run = collect.load_run(str(tmp_path))
  m = registry.core(run)
  cls = m.tables["class_level"]
  if members == 1:
    assert cls.p_value.isna().all() and not cls.significant.any()
    assert any("Welch" in n for n in m.notes["class_level"])
    assert np.isnan(m.variants["prune_0.9"]["mean_alpha"])
  elif members == 3:  # with 2 members both samples can be constant (p = NaN, docs/spec.md §3.1)
    assert cls.p_value.notna().any()
  assert m.variants["prune_0.9"]["pie_count"] > 0


def test_paired_measures_use_shared_members(tmp_path):
  fake_run.make_biased_run(str(tmp_path), members=3)
  import shutil

  shutil.rmtree(tmp_path / "predictions" / "prune_0.9" / "1")
  run = collect.load_run(str(tmp_path))
  m = registry.core(run)
  assert m.cie["prune_0.9"]["members"] == 2
  assert m.variants["prune_0.9"]["members"] == 2
  assert len(m.variants["prune_0.9"]["alphas"]) == 2
