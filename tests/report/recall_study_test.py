"""recall_study and parent pairing: planted α per member is found through the parent link.

Golden values come from the construction of `fake_run.make_oneshot_run` (its docstring), not
from the code under test: member k of a one-shot variant has slope exactly
`planted_alpha(f, i, k)` against its dense parent; the CI is mean ± t_{0.995, K−1} s/√K
(002 §6.2) with scipy's t quantile; p-values are scipy's `ttest_rel` on the planted slopes.
Against dense member k instead of its parent k' the slope is α · (P · roll(P, k − k')) / (P · P)
(P = [8, −8, 4, −4, 0, ...]): for k' = k + 1, α · (−64 − 32 − 16) / 160 = −0.7 α.
"""

import json
import os
import re

import numpy as np
import pytest
from scipy import stats as sp_stats

from tests.report import fake_run
from tf_forget.report import class_measures
from tf_forget.report import collect
from tf_forget.report import pairing as pairing_lib
from tf_forget.report import recall_study
from tf_forget.report import recall_study_plots
from tf_forget.report import write
from tf_forget.report.units import registry
from tf_forget.stats import recall_distortion
from tf_forget.stats import recall_tests

CHILD = "oneshot_up_r10+full_int8"
LABELS = {"oneshot_mp_r2": "<", "oneshot_mp_r10": ">", "oneshot_up_r2": "?", "oneshot_up_r10": ">"}


@pytest.fixture(scope="module")
def shifted(tmp_path_factory):
  """Parents k' = k + 1 (mod 6): pairing by parent and by index differ."""
  run_dir = str(tmp_path_factory.mktemp("shifted"))
  planted, parents = fake_run.make_oneshot_run(
    run_dir, parent_shift=1, children=(CHILD,), gradual=True
  )
  run = collect.load_run(run_dir)
  return run_dir, run, registry.core(run), planted, parents


def _by_parent(planted, parents, variant):
  return {parents[variant][k]: a for k, a in planted[variant].items()}


def test_alpha_follows_the_parent_link_not_the_index(shifted):
  _, run, m, planted, parents = shifted
  for variant in fake_run.ONESHOT:
    pairing = run.pairing[variant]
    assert pairing["kind"] == "parent" and pairing["notes"] == []
    assert pairing["pairs"] == [(parents[variant][k], k) for k in range(6)]
    s = m.variants[variant]
    assert s["pairing"] == "parent"
    assert s["alpha_pairs"] == [[parents[variant][k], k] for k in range(6)]
    np.testing.assert_allclose(s["alphas"], [planted[variant][k] for k in range(6)], atol=1e-12)
    # The same members paired by index give another slope (module docstring): the link
    # matters.
    q0, qt = pairing_lib.paired(run.eval["dense"], run.eval[variant])
    r = [class_measures.recall_and_accuracy(q, 10) for q in (q0, qt)]
    by_index = recall_distortion.recall_distortion_summary(r[0][0], r[0][1], r[1][0], r[1][1])[
      "alphas"
    ]
    p = fake_run.PATTERN
    expected = [
      planted[variant][k] * p @ np.roll(p, k - parents[variant][k]) / (p @ p) for k in range(6)
    ]
    np.testing.assert_allclose(by_index, expected, atol=1e-12)
    assert expected[0] == pytest.approx(-0.7 * planted[variant][0])
  # A quantized child pairs through its member variant's link; gradual pruning by index.
  assert run.pairing[CHILD]["pairs"] == run.pairing["oneshot_up_r10"]["pairs"]
  np.testing.assert_allclose(m.variants[CHILD]["alphas"], m.variants["oneshot_up_r10"]["alphas"])
  assert run.pairing["prune_0.9"]["label"] == "index (independent members)"
  rd = m.tables["recall_distortion"].set_index("variant")
  assert rd.loc["prune_0.9", "pairing"] == "index (independent members)"
  assert (rd.loc[list(fake_run.ONESHOT) + [CHILD], "pairing"] == "parent").all()


def test_oneshot_alpha_table(shifted):
  _, _, m, planted, _ = shifted
  t = m.tables["oneshot_alpha"]
  assert list(t.variant) == [
    "oneshot_mp_r2",
    "oneshot_mp_r10",
    "oneshot_up_r2",
    "oneshot_up_r10",
  ]  # algorithm order of 002, then ratio
  assert CHILD not in set(t.variant) and "prune_0.9" not in set(t.variant)
  t = t.set_index("variant")
  half = sp_stats.t.ppf(0.995, 5)
  for variant, factor in fake_run.ONESHOT.items():
    row = t.loc[variant]
    alphas = np.array(list(planted[variant].values()))
    assert (row.algorithm, row.ratio) == {
      "oneshot_mp_r2": ("mp", 2.0),
      "oneshot_mp_r10": ("mp", 10.0),
      "oneshot_up_r2": ("up", 2.0),
      "oneshot_up_r10": ("up", 10.0),
    }[variant]
    assert row.mean_alpha == pytest.approx(factor)  # the offsets average 0
    assert row.ci_low == pytest.approx(factor - half * alphas.std(ddof=1) / np.sqrt(6))
    assert row.ci_high == pytest.approx(factor + half * alphas.std(ddof=1) / np.sqrt(6))
    assert row.label == LABELS[variant] and row.n == 6 and row.pairing == "parent"
    # Every member has the same Σ x², so the pooled slope is the mean slope.
    assert row.alpha_hat == pytest.approx(factor)
    assert row.mean_accuracy_0 == pytest.approx(0.6) and row.mean_accuracy_t == pytest.approx(0.6)
    # Var over classes of R^c = 1 − (20 + P_c)/50 is Var(P)/2500 = 16/2500 (ddof 0).
    assert row.recall_variance_0 == pytest.approx(16 / 2500)
    assert row.recall_variance_t == pytest.approx(16 / 2500 * np.mean(alphas**2))
    assert (row.ratio_over, row.exclude_classifier) == ("prunable", False)


def test_tests_are_paired_by_parent_with_bonferroni(shifted):
  _, _, m, planted, parents = shifted

  def planted_pair(a, b):
    pa, pb = _by_parent(planted, parents, a), _by_parent(planted, parents, b)
    return [pa[k] for k in sorted(pa)], [pb[k] for k in sorted(pa)]

  ratio = m.tables["oneshot_ratio_tests"].set_index("algorithm")
  for alg in ("mp", "up"):
    a, b = planted_pair(f"oneshot_{alg}_r2", f"oneshot_{alg}_r10")
    expected = sp_stats.ttest_rel(a, b, alternative="less").pvalue
    row = ratio.loc[alg]
    assert (row.first, row.second, row.alternative, row.n) == (2.0, 10.0, "less", 6)
    assert row.p_value == pytest.approx(expected, rel=1e-9)
    assert row.rows == 1 and row.p_bonferroni == pytest.approx(expected, rel=1e-9)
  algs = m.tables["oneshot_algorithm_tests"]
  assert list(algs.ratio) == [2.0, 10.0] and (algs.rows == 1).all()
  mpup = m.tables["oneshot_mp_vs_up"]
  assert list(mpup.ratio) == [2.0, 10.0] and (mpup.rows == 2).all()
  for row in mpup.itertuples():
    a, b = planted_pair(f"oneshot_mp_r{row.ratio:g}", f"oneshot_up_r{row.ratio:g}")
    p = sp_stats.ttest_rel(a, b).pvalue
    assert row.p_value == pytest.approx(p, rel=1e-9)
    assert row.p_bonferroni == pytest.approx(min(1.0, 2 * p), rel=1e-9)
    assert algs[algs.ratio == row.ratio].p_value.iloc[0] == pytest.approx(p, rel=1e-9)
  assert any("model-size (M" in n for n in m.notes["recall_study"])


def _cells(rng, algorithms=("mp", "gp", "up", "rp"), ratios=(2.0, 4.0, 10.0), k=30):
  return [
    {
      "variant": f"oneshot_{a}_r{r:g}",
      "algorithm": a,
      "ratio": r,
      "alphas": {m: float(x) for m, x in enumerate(rng.normal(1 + 0.1 * r, 0.3, k))},
    }
    for a in algorithms
    for r in ratios
  ]


def test_bonferroni_multipliers_and_intersection_of_parents():
  cells = _cells(np.random.default_rng(0))
  algs = recall_study.algorithm_tests(cells)
  assert len(algs) == 18 and (algs.rows == 6).all()  # 6 pairs of 4 algorithms per ratio
  np.testing.assert_allclose(algs.p_bonferroni, np.minimum(1, 6 * algs.p_value))
  # With every parent on every side, the rows are the stats library's 002 Table 8.
  at2 = {c["algorithm"]: list(c["alphas"].values()) for c in cells if c["ratio"] == 2.0}
  lib = recall_tests.algorithm_tests(at2)
  np.testing.assert_allclose(algs[algs.ratio == 2.0].p_value, lib.p_value, rtol=1e-12)
  ratios = recall_study.ratio_tests(cells)
  assert len(ratios) == 8 and (ratios.rows == 2).all() and (ratios.alternative == "less").all()
  mpup = recall_study.mp_vs_up_tests(cells)
  assert list(mpup.ratio) == [2.0, 4.0, 10.0] and (mpup.rows == 3).all()
  # Parent 3 missing at mp r4, parent 5 with an undefined α at gp r4: those rows pair 28-29.
  del cells[1]["alphas"][3]
  cells[4]["alphas"][5] = float("nan")
  algs = recall_study.algorithm_tests(cells).set_index(["ratio", "first", "second"])
  assert algs.loc[(4.0, "mp", "gp"), "n"] == 28 and algs.loc[(4.0, "mp", "up"), "n"] == 29
  assert algs.loc[(4.0, "up", "rp"), "n"] == 30
  a = {k: v for k, v in cells[1]["alphas"].items()}
  b = cells[7]["alphas"]
  ks = sorted(set(a) & set(b))
  assert algs.loc[(4.0, "mp", "up"), "p_value"] == pytest.approx(
    sp_stats.ttest_rel([a[k] for k in ks], [b[k] for k in ks]).pvalue, rel=1e-12
  )


def _set_dense_sha(run_dir, k, sha):
  path = os.path.join(run_dir, "members", "dense", str(k), "metadata.json")
  with open(path, "w") as f:
    json.dump({"model_sha256": sha}, f)


def test_stale_or_missing_parent_link_drops_the_member(tmp_path):
  run_dir = str(tmp_path)
  planted, _ = fake_run.make_oneshot_run(run_dir, children=(CHILD,))
  _set_dense_sha(run_dir, 2, "f" * 64)  # dense/2 retrained after the pruning
  os.remove(os.path.join(run_dir, "members", "oneshot_mp_r2", "4", "metadata.json"))
  run = collect.load_run(run_dir)
  m = registry.core(run)
  for variant in list(fake_run.ONESHOT) + [CHILD]:
    pairs = run.pairing[variant]["pairs"]
    dropped = {2, 4} if variant == "oneshot_mp_r2" else {2}
    assert [k for _, k in pairs] == [k for k in range(6) if k not in dropped]
    stale = [n for n in m.notes["pairing"] if n.startswith(variant + ":") and "stale" in n]
    assert len(stale) == 1 and "member 2 left out" in stale[0] and "\n" not in stale[0]
    assert m.variants[variant]["members"] == 6  # unpaired measures keep every member
    assert len(m.variants[variant]["alphas"]) == 6 - len(dropped)
    assert m.cie[variant]["members"] == 6 - len(dropped)
    member = variant.split("+")[0]
    np.testing.assert_allclose(
      m.variants[variant]["alphas"], [planted[member][k] for k in range(6) if k not in dropped]
    )
  assert any(
    n.startswith("oneshot_mp_r2: member 4 left out") and "metadata.json" in n
    for n in m.notes["pairing"]
  )
  assert m.tables["oneshot_alpha"].set_index("variant").loc["oneshot_mp_r2", "n"] == 4
  ratio = m.tables["oneshot_ratio_tests"].set_index("algorithm")
  assert ratio.loc["mp", "n"] == 4 and ratio.loc["up", "n"] == 5  # parents both sides have


def test_without_members_directory_pairs_by_index(tmp_path):
  fake_run.make_oneshot_run(str(tmp_path), metadata=False)
  run = collect.load_run(str(tmp_path))
  pairing = run.pairing["oneshot_up_r2"]
  assert pairing["kind"] == "index" and pairing["label"] == "index (no member metadata)"
  assert pairing["pairs"] == [(k, k) for k in range(6)]
  m = registry.core(run)
  assert set(m.tables["oneshot_alpha"].pairing) == {"index (no member metadata)"}
  assert (m.tables["oneshot_alpha"].ratio_over.isna()).all()


def test_html_json_and_csv_have_the_study(shifted, tmp_path):
  run_dir, _, _, _, _ = shifted
  out = str(tmp_path / "out")
  doc = write.write_report(run_dir, out, {})
  names = {"oneshot_alpha", "oneshot_ratio_tests", "oneshot_algorithm_tests", "oneshot_mp_vs_up"}
  assert names <= set(doc["tables"])
  assert names <= {f[:-4] for f in os.listdir(os.path.join(out, "tables"))}
  assert doc["tables"]["oneshot_mp_vs_up"][0]["rows"] == 2
  page = open(os.path.join(out, "report.html"), encoding="utf-8").read()
  section = page.split("<section id=\"recall-study\">")[1].split("</section>")[0]
  assert "Recall distortion after one-shot pruning (002)" in section
  assert section.count("data:image/png;base64,") == 2
  for text in ("oneshot_mp_r10", "Bonferroni", "0.0250", "model-size (M"):
    assert text in section, text
  assert len(re.findall(r"<table class=", section)) == 4
  alpha = page.split("<section id=\"recall-distortion\">")[1].split("</section>")[0]
  assert "same network before and after pruning" in alpha and ">parent<" in alpha
  assert "index (independent members)" in alpha


def test_no_study_without_oneshot_variants(tmp_path):
  fake_run.make_biased_run(str(tmp_path), members=3)
  run = collect.load_run(str(tmp_path))
  m = registry.core(run)
  assert m.study is None and not any(n.startswith("oneshot") for n in m.tables)
  assert run.pairing["full_int8"]["label"] == "index (same network)"


def test_study_figures_are_deterministic_pngs(shifted):
  _, _, m, _, _ = shifted
  t = m.tables["oneshot_alpha"]
  for draw in (recall_study_plots.alpha_boxplots, recall_study_plots.balance_scatter):
    first = draw(t, m.study.cells)
    assert first.startswith(b"\x89PNG\r\n\x1a\n") and first == draw(t, m.study.cells)
    assert b"Software" not in first


def test_a_variant_without_current_links_still_renders(tmp_path):
  run_dir = str(tmp_path)
  fake_run.make_oneshot_run(
    run_dir, members=3, variants={"oneshot_mp_r4": 1.5, "oneshot_up_r4": 1.0}
  )
  for k in range(3):
    _set_dense_sha(run_dir, k, "e" * 64)
  report = write.build_report(run_dir, {})
  m = report.measures
  assert all(len(m.variants[v]["alphas"]) == 0 for v in ("oneshot_mp_r4", "oneshot_up_r4"))
  row = m.tables["oneshot_mp_vs_up"].iloc[0]
  assert row.n == 0 and np.isnan(row.p_value) and row.rows == 1
  assert any("a paired test needs 2" in n for n in m.notes["recall_study"])
  assert len([n for n in m.notes["pairing"] if "stale" in n]) == 2  # one line per variant
  assert "<section id=\"recall-study\">" in report.html
