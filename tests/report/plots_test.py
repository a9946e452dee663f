"""plots and gallery thumbnails: PNG bytes at 2x, deterministic, no software / date metadata;
legible from 2 to 30 variants."""

import io

from matplotlib import text as mpl_text
import numpy as np
import pandas as pd
from PIL import Image
import pytest

from tests.report import fake_run
from tf_forget.report import collect
from tf_forget.report import figure_kit
from tf_forget.report import gallery
from tf_forget.report import palette
from tf_forget.report import plots
from tf_forget.report import recall_study_plots
from tf_forget.report import subgroup_plots
from tf_forget.report.units import registry

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
PX = figure_kit.DPI * figure_kit.SCALE  # pixels per inch of every PNG
VARIANTS = [
  "dense",
  "float16",
  "dynamic_int8",
  "full_int8",
  "float32+sparse",
  "prune_0.5",
  "prune_0.5+float16",
  "prune_0.7",
  "prune_0.8",
  "prune_0.9",
  "prune_0.9+full_int8",
  "prune_0.9+sparse",
  "prune_0.9+full_int8+sparse",
  "prune_0.95",
  "oneshot_mp_r2",
  "oneshot_mp_r4",
  "oneshot_mp_r10",
  "oneshot_up_r2",
  "oneshot_up_r4",
  "oneshot_up_r10",
  "oneshot_up_r10+full_int8",
  "oneshot_gp_r10",
  "oneshot_rp_r10",
  "iter_wt_c1",
  "iter_wt_c2",
  "iter_wt_c3",
  "iter_wt_c4",
  "iter_ft_c1",
  "iter_ft_c2",
  "iter_ft_c3",
]
CORRUPTIONS = [
  "gaussian_noise",
  "shot_noise",
  "impulse_noise",
  "defocus_blur",
  "glass_blur",
  "motion_blur",
  "zoom_blur",
  "snow",
  "frost",
  "fog",
  "brightness",
  "contrast",
  "elastic_transform",
  "pixelate",
  "jpeg_compression",
  "speckle_noise",
  "gaussian_blur",
  "spatter",
  "saturate",
]


@pytest.fixture(scope="module")
def biased(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("biased"))
  fake_run.make_biased_run(run_dir, members=3)
  run = collect.load_run(run_dir)
  return run, registry.core(run)


def _size(png):
  with Image.open(io.BytesIO(png)) as im:
    return im.size


def _synthetic(n, seed=0):
  """Tables of the report with the first n of `VARIANTS` (values drawn at random)."""
  rng = np.random.default_rng(seed)
  vs = VARIANTS[:n]
  top = pd.DataFrame(
    [
      {"variant": v, "metric": m, "mean": a, "min": a - 0.01, "max": a + 0.01}
      for v in vs
      for m, a in (("top1", rng.uniform(0.85, 0.95)), ("top5", rng.uniform(0.95, 0.99)))
    ]
  )
  summary = {
    v: {"significant_classes": int(rng.integers(0, 9)), "alphas": list(rng.normal(1, 0.2, 4))}
    for v in vs
  }
  pie = pd.DataFrame({"variant": vs[1:], "pie_count": rng.integers(0, 300, n - 1)})
  alpha = pd.DataFrame(
    [
      {"variant": v, "mean_alpha": a, "ci_low": a - 0.2, "ci_high": a + 0.2, "label": "?"}
      for v, a in zip(vs[1:], rng.normal(1, 0.2, n - 1))
    ]
  )
  rob = pd.DataFrame(
    [
      {"variant": v, "corruption": c, "top1_norm": 0.0 if v == "dense" else rng.normal(-5, 8)}
      for c in CORRUPTIONS
      for v in vs
    ]
  )
  eps = [0.0, 0.02, 0.05, 0.1]
  acc = pd.DataFrame(
    [{"variant": v, "eps": e, "top1": 0.9 - e * rng.uniform(1, 5)} for v in vs for e in eps]
  )
  sim = pd.DataFrame(
    [
      {"variant": v, "eps": e, "matching": 1 - e * rng.uniform(1, 5)}
      for v in ["dense (independent)"] + vs[1:]
      for e in eps
    ]
  )
  dep = pd.DataFrame(
    [
      {
        "variant": v,
        "encoding": "sparse" if "prune" in v else "plain",
        "top1": rng.uniform(0.88, 0.92),
        "plain_bytes": 1e6,
        "shipped_vs_dense_float32": 0.3 if "prune" in v else 1.0,
      }
      for v in vs
    ]
  )
  return {
    "topline": top,
    "summary": summary,
    "pie": pie,
    "alpha": alpha,
    "robustness": rob,
    "noise": (acc, sim),
    "deployment": dep,
  }


def _figures(m):
  t = m.tables
  return {
    "topline": lambda: plots.topline(t["topline"]),
    "class_level": lambda: plots.class_level(
      t["class_level"][t["class_level"].variant == "prune_0.9"], "prune_0.9"
    ),
    "counts": lambda: plots.counts(t["pie"], m.variants),
    "pie_accuracy": lambda: plots.pie_accuracy(t["pie_accuracy"]),
    "subgroups": lambda: subgroup_plots.subgroups(t["subgroups"]),
    "over_indexing": lambda: subgroup_plots.over_indexing(t["over_indexing"]),
    "alpha": lambda: recall_study_plots.alpha(t["recall_distortion"], m.variants),
  }


def test_every_figure_is_a_deterministic_png_at_twice_its_size(biased):
  _, m = biased
  for name, draw in _figures(m).items():
    first, second = draw(), draw()
    assert first.startswith(PNG_MAGIC), name
    assert first == second, f"{name} is not deterministic"
    assert b"matplotlib" not in first.lower() and b"Software" not in first, name
    with Image.open(io.BytesIO(first)) as im:
      assert im.size[0] in (figure_kit.WIDTH * PX, figure_kit.WIDE * PX), (name, im.size)
      assert len(set(im.convert("L").getdata())) > 2  # not blank


def test_png_pixels_are_inches_times_dpi_times_scale():
  assert figure_kit.SCALE == 2
  fig, _ = figure_kit.figure(3.0, width=figure_kit.WIDTH)
  assert fig.get_size_inches().tolist() == [figure_kit.WIDTH, 3.0]
  assert _size(figure_kit.to_png(fig)) == (1500, 600)  # 7.5 in x 3 in at 100 dpi x 2
  fig, _ = figure_kit.figure(2.5, ncols=2, nrows=2, width=figure_kit.WIDE)
  assert _size(figure_kit.to_png(fig)) == (2400, 1000)


def test_html_shows_figures_at_the_scale_they_are_drawn():
  from tf_forget.report import html

  assert html.FIGURE_SCALE == figure_kit.SCALE  # else the page would up- or downscale every figure


@pytest.mark.parametrize("name", ["topline", "counts", "alpha", "robustness"])
def test_variant_rows_grow_with_the_number_of_variants(name):
  def draw(n):
    t = _synthetic(n)
    return {
      "topline": lambda: plots.topline(t["topline"]),
      "counts": lambda: plots.counts(t["pie"], t["summary"]),
      "alpha": lambda: recall_study_plots.alpha(t["alpha"], t["summary"]),
      "robustness": lambda: plots.robustness(t["robustness"]),
    }[name]()

  (_, h2), (w30, h30) = _size(draw(2)), _size(draw(30))
  assert w30 <= figure_kit.WIDE * PX
  # Every extra variant row adds at least 0.2 in (the labels of 9 pt text need 0.125 in).
  assert h30 - h2 >= 28 * 0.2 * PX, (h2, h30)


def test_thirty_variants_draw_with_distinct_styles():
  t = _synthetic(30)
  acc, sim = t["noise"]
  for png in (
    plots.noise(acc, sim),
    plots.size_accuracy(t["deployment"]),
    plots.robustness(t["robustness"]),
  ):
    assert png.startswith(PNG_MAGIC)
  styles = figure_kit.variant_styles(VARIANTS)
  assert len({(s["color"], s["hatch"], s["marker"]) for s in styles.values()}) == 30
  assert styles["dense"]["color"] == palette.DENSE_COLOR
  assert plots.size_accuracy(t["deployment"]) == plots.size_accuracy(t["deployment"])


def test_placed_labels_do_not_overlap():
  fig, (ax,) = figure_kit.figure(3.6)
  rng = np.random.default_rng(0)
  xy = [(float(x), float(y)) for x, y in zip(rng.uniform(0, 1, 30), rng.uniform(0, 0.3, 30))]
  ax.scatter(*zip(*xy))
  ax.set_xlim(-0.2, 1.2)
  ax.set_ylim(-1, 1.3)
  figure_kit.place_labels(fig, ax, xy, [f"oneshot_up_r{i}+full_int8" for i in range(30)])
  fig.draw_without_rendering()
  renderer = fig.canvas.get_renderer()
  # The text only (an annotation's own extent includes its leader line).
  boxes = [mpl_text.Text.get_window_extent(t, renderer) for t in ax.texts]
  assert len(boxes) == 30
  frame = ax.get_window_extent(renderer)
  for i, a in enumerate(boxes):
    assert frame.x0 <= a.x0 and a.x1 <= frame.x1 and frame.y0 <= a.y0 and a.y1 <= frame.y1
    for b in boxes[i + 1 :]:
      assert not a.overlaps(b), (a, b)


def test_subgroup_figure_plots_absolute_points():
  # What a reader must see: FNR of the planted group 79.6% -> 97.5% is +17.9 points, but
  # its normalized difference 100 (97.5 - 79.6) / 79.6 = +22.5% read as small.
  groups = {"aggregate": (0.20, 0.25), "Inverted=1": (0.796, 0.975)}
  rows = []
  for metric in ("error", "fpr", "fnr"):
    b = {g: v[0] for g, v in groups.items()}
    c = {g: v[1] for g, v in groups.items()}
    rows += [
      {"variant": "prune_0.9", "model": "baseline", "metric": metric, **b},
      {"variant": "prune_0.9", "model": "compressed", "metric": metric, **c},
      {
        "variant": "prune_0.9",
        "model": "normalized_difference",
        "metric": metric,
        **{g: 100 * (c[g] - b[g]) / b[g] for g in groups},
      },
      {
        "variant": "prune_0.9",
        "model": "absolute_difference",
        "metric": metric,
        **{g: c[g] - b[g] for g in groups},
      },
    ]
  table = pd.DataFrame(rows)
  pts = subgroup_plots.subgroup_points(table)
  row = pts[(pts.metric == "fnr") & (pts.subgroup == "Inverted=1")].iloc[0]
  assert row.points == pytest.approx(17.9)
  assert row.normalized == pytest.approx(22.487, abs=1e-3)
  assert list(pts.columns) == ["metric", "variant", "subgroup", "points", "normalized"]
  assert subgroup_plots.subgroups(table).startswith(PNG_MAGIC)


def test_subgroup_points_of_a_run_are_compressed_minus_baseline(biased):
  _, m = biased
  t = m.tables["subgroups"]
  pts = subgroup_plots.subgroup_points(t)
  groups = [c for c in t.columns if c not in ("variant", "model", "metric")]
  for variant in ("prune_0.9", "full_int8"):
    for metric in ("error", "fpr", "fnr"):
      rate = {
        model: t[(t.variant == variant) & (t.model == model) & (t.metric == metric)][groups]
        .iloc[0]
        .to_numpy(float)
        for model in ("baseline", "compressed")
      }
      got = pts[(pts.variant == variant) & (pts.metric == metric)].points.to_numpy(float)
      np.testing.assert_allclose(got, 100 * (rate["compressed"] - rate["baseline"]), atol=1e-9)
  # prune_0.9 misses every positive of Inverted=1 (fake_run): its FNR change is large.
  inv = pts[
    (pts.variant == "prune_0.9") & (pts.metric == "fnr") & (pts.subgroup == "Inverted=1")
  ].points.iloc[0]
  assert inv > 50


def test_subgroups_with_many_variants_is_a_heatmap_of_the_same_width():
  rows = []
  for v in VARIANTS[1:]:
    for metric in ("error", "fpr", "fnr"):
      for model, value in (
        ("baseline", 0.1),
        ("compressed", 0.15),
        ("normalized_difference", 50),
        ("absolute_difference", 0.05),
      ):
        rows.append({"variant": v, "model": model, "metric": metric, "a": value, "b": value})
  png = subgroup_plots.subgroups(pd.DataFrame(rows))
  assert _size(png)[0] == figure_kit.WIDE * PX


def test_robustness_figure_with_nan():
  table = pd.DataFrame(
    {
      "variant": ["dense", "prune_0.5", "dense", "prune_0.5"],
      "corruption": ["fog", "fog", "snow", "snow"],
      "top1": [0.5, 0.4, 0.6, np.nan],
      "top5": np.nan,
      "top1_norm": [0.0, -20.0, 0.0, np.nan],
      "top5_norm": np.nan,
    }
  )
  assert plots.robustness(table).startswith(PNG_MAGIC)


def test_class_level_with_many_classes_draws_significant_ones():
  n = 200
  table = pd.DataFrame(
    {
      "class_name": [f"c{i}" for i in range(n)],
      "significant": np.arange(n) % 7 == 0,
      "absolute_recall_difference": np.linspace(-0.3, 0.2, n),
      "normalized_recall_difference": np.linspace(-0.25, 0.25, n),
    }
  )
  assert plots.class_level(table, "prune_0.9").startswith(PNG_MAGIC)


def test_thumbnails_upscale_small_images_by_nearest():
  img = np.arange(64, dtype=np.uint8).reshape(8, 8, 1) * 4
  png = gallery.thumbnail(img)
  with Image.open(io.BytesIO(png)) as im:
    arr = np.asarray(im)
  assert arr.shape == (64, 64)
  np.testing.assert_array_equal(arr[::8, ::8], img[:, :, 0])  # nearest: blocks of 8x8
  np.testing.assert_array_equal(arr[7::8, 7::8], img[:, :, 0])
  big = gallery.thumbnail(np.zeros((218, 178, 3), np.uint8))
  with Image.open(io.BytesIO(big)) as im:
    assert max(im.size) == gallery.MAX_SIDE
  assert gallery.thumbnail(img) == png


def test_gallery_lists_only_changed_examples(biased):
  run, m = biased
  g = gallery.build(run, m.cie, size=5)
  assert g["full_int8"] == []  # full_int8 equals dense: no CIE
  entries = g["prune_0.9"]
  assert [e["rank"] for e in entries] == [1, 2, 3, 4, 5]
  for e in entries:
    assert e["label"] == 1 and e["dense_modal"] == 1 and e["compressed_modal"] == 0
    assert e["attributes"]["Inverted"] and e["distance"] == e["max_distance"] == 6
    assert e["png"].startswith(PNG_MAGIC)
    assert e["label_name"] == "zero_or_one (1)"
