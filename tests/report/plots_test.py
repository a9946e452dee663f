"""plots and gallery thumbnails: PNG bytes, deterministic, no software / date metadata."""

import io

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from tests.report import fake_run
from tf_forget.report import collect
from tf_forget.report import gallery
from tf_forget.report import measures
from tf_forget.report import plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def biased(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("biased"))
  fake_run.make_biased_run(run_dir, members=3)
  run = collect.load_run(run_dir)
  return run, measures.compute(run)


def _figures(m):
  t = m.tables
  return {
      "topline": lambda: plots.topline(t["topline"]),
      "class_level": lambda: plots.class_level(
          t["class_level"][t["class_level"].variant == "prune_0.9"], "prune_0.9"),
      "counts": lambda: plots.counts(t["pie"], m.variants),
      "pie_accuracy": lambda: plots.pie_accuracy(t["pie_accuracy"]),
      "subgroups": lambda: plots.subgroups(t["subgroups"]),
      "over_indexing": lambda: plots.over_indexing(t["over_indexing"]),
      "alpha": lambda: plots.alpha(t["recall_distortion"], m.variants),
  }


def test_every_figure_is_a_deterministic_png(biased):
  _, m = biased
  for name, draw in _figures(m).items():
    first, second = draw(), draw()
    assert first.startswith(PNG_MAGIC), name
    assert first == second, f"{name} is not deterministic"
    assert b"matplotlib" not in first.lower() and b"Software" not in first, name
    with Image.open(io.BytesIO(first)) as im:
      assert im.size[0] >= 700
      assert len(set(im.convert("L").getdata())) > 2  # not blank


def test_robustness_figure_with_nan():
  table = pd.DataFrame({"variant": ["dense", "prune_0.5", "dense", "prune_0.5"],
                        "corruption": ["fog", "fog", "snow", "snow"],
                        "top1": [0.5, 0.4, 0.6, np.nan], "top5": np.nan,
                        "top1_norm": [0.0, -20.0, 0.0, np.nan], "top5_norm": np.nan})
  assert plots.robustness(table).startswith(PNG_MAGIC)


def test_class_level_with_many_classes_draws_significant_ones():
  n = 200
  table = pd.DataFrame({"class_name": [f"c{i}" for i in range(n)],
                        "significant": np.arange(n) % 7 == 0,
                        "absolute_recall_difference": np.linspace(-0.3, 0.2, n),
                        "normalized_recall_difference": np.linspace(-0.25, 0.25, n)})
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
