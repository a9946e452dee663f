"""Published test sets in the report (tf_forget/report/published_report.py): 000 Table 8
(ImageNet-A, docs/spec.md §3.6) and CIFAR-10.1, on hand-made predictions against hand-computed
values."""

import os
import re

import numpy as np
import pytest
import tensorflow_datasets as tfds

from tests.report import fake_run
from tf_forget.artifacts import predictions
from tf_forget.data import dataset_api
from tf_forget.report import collect
from tf_forget.report import html
from tf_forget.report import imagenet_a_classes
from tf_forget.report import published_report
from tf_forget.report.units import registry

# tfds' imagenet2012 label file: the label space of tfds' imagenet_a (its ClassLabel reads it).
IMAGENET_LABELS = os.path.join(
  os.path.dirname(tfds.__file__), "datasets", "imagenet2012", "labels.txt"
)


class _Stub:
  """A data set of which the report needs only the spec (no attributes, no images read)."""

  def __init__(self, name, num_classes, eval_split):
    self.spec = dataset_api.DatasetSpec(
      name=name,
      num_classes=num_classes,
      image_shape=(8, 8, 3),
      splits=(eval_split,),
      eval_split=eval_split,
    )


def _page(m, run):
  """The report page of the core measures `m` of `run` alone (no gallery, no
  recommendation)."""
  return html.page(
    "t",
    [],
    [
      (sec.id, sec.title, sec.nav, inner)
      for sec, inner in registry.render(m, run, run.run_dir, {}, {})
    ],
  )


def _ranked(rows, num_classes=1000):
  """Scores: per example, the listed classes get 1.0, 0.9, ... in order, every other class 0
  (ties -> lowest index, docs/spec.md §1.2)."""
  scores = np.zeros((len(rows), num_classes), np.float32)
  for i, classes in enumerate(rows):
    for rank, c in enumerate(classes):
      scores[i, c] = 1.0 - 0.1 * rank
  return scores


def _write(run, variant, k, split, labels, scores, dataset):
  labels = np.asarray(labels)
  predictions.write(
    predictions.path(run, variant, k, split),
    np.arange(labels.size),
    labels,
    scores,
    {"variant": variant, "member_variant": variant, "k": k, "dataset": dataset, "split": split},
    save_logits=True,
  )


# ImageNet-A labels: 6, 11, 13 are ImageNet-A classes, 500 is not (it lies between 496 and 514).
A_LABELS = [6, 11, 13, 500]
# Per member, the classes ranked first for each example. Hand-computed correctness
# (1000-way top-1 / top-5; masked to the 200 classes top-1 / top-5):
#   dense 0: e0 [0, 6] -/+ ; +/+   e1 [11] +/+ ; +/+   e2 [2, 15, 13] -/+ ; -(15)/+
#            e3 [500] +/+ ; -/-  (masked: all 200 scores 0 -> 6, 11, 13, 15, 17)
#            -> 1000: 2/4, 4/4; masked 2/4, 3/4
#   dense 1: e0 [6] +/+ ; +/+   e1 [11] +/+ ; +/+   e2 [13] +/+ ; +/+   e3 [0] -/- ; -/-
#            -> 1000: 3/4, 3/4; masked 3/4, 3/4
#   prune 0: every example [0]: 1000 all wrong (top-5 0..4); masked ties -> 6, 11, 13, 15, 17:
#            e0 +/+, e1 -/+, e2 -/+, e3 -/-  -> 1000: 0/4, 0/4; masked 1/4, 3/4
#   prune 1: e0 [6] +/+ ; +/+   e1 [11] +/+ ; +/+   e2 [0] -/- ; -/+   e3 [0] -/- ; -/-
#            -> 1000: 2/4, 2/4; masked 2/4, 3/4
A_RANKS = {
  ("dense", 0): [[0, 6], [11], [2, 15, 13], [500]],
  ("dense", 1): [[6], [11], [13], [0]],
  ("prune_0.9", 0): [[0], [0], [0], [0]],
  ("prune_0.9", 1): [[6], [11], [0], [0]],
}
# Means over the 2 members: dense 1000 top-1 0.625, top-5 0.875, masked 0.625, 0.75;
# prune_0.9 1000 top-1 0.25, top-5 0.25, masked 0.375, 0.75. Normalized 100·(A_t/A_0 − 1).
WANT = {
  (1000, "dense"): (0.625, 0.875, 0.0, 0.0),
  (1000, "prune_0.9"): (0.25, 0.25, 100 * (0.25 / 0.625 - 1), 100 * (0.25 / 0.875 - 1)),
  (200, "dense"): (0.625, 0.75, 0.0, 0.0),
  (200, "prune_0.9"): (0.375, 0.75, 100 * (0.375 / 0.625 - 1), 0.0),
}


@pytest.fixture(name="imagenet_run")
def _imagenet_run(tmp_path):
  run = str(tmp_path)
  for (variant, k), ranks in A_RANKS.items():
    _write(run, variant, k, "imagenet_a", A_LABELS, _ranked(ranks), "imagenet2012")
    _write(run, variant, k, "validation", [1, 2], _ranked([[1], [2]]), "imagenet2012")
  return collect.load_run(run, dataset=_Stub("imagenet2012", 1000, "validation"))


def test_the_200_classes_agree_with_tfds_label_space():
  # Two sources: Hendrycks' eval.py indices and the ImageNet-A class folders (wnids), paired
  # through tfds' imagenet2012 labels.txt, the label space of tfds' imagenet_a.
  idx = imagenet_a_classes.INDICES_IN_1K
  assert len(idx) == 200 and list(idx) == sorted(set(idx)) and 0 <= idx[0] and idx[-1] < 1000
  with open(IMAGENET_LABELS) as f:
    wnids = f.read().split()
  assert len(wnids) == 1000
  assert [wnids[i] for i in idx] == list(imagenet_a_classes.WNIDS)
  # ImageNet-A's first and last classes: stingray (index 6) and acorn.
  assert wnids[6] == "n01498041" and imagenet_a_classes.WNIDS[-1] == "n12267677"


def test_masked_topk_is_the_argmax_over_the_200_classes():
  scores = _ranked([[0, 6], [2, 15, 13], [500]])
  out = published_report.masked_topk(scores)
  assert out.shape == (3, 5)
  np.testing.assert_array_equal(out[:, 0], [6, 15, 6])  # 0, 2, 500 are not ImageNet-A classes
  np.testing.assert_array_equal(out[1], [15, 13, 6, 11, 17])  # then ties by lowest index
  np.testing.assert_array_equal(
    published_report.masked_topk(scores, indices=[2, 500], k=1)[:, 0], [2, 2, 500]
  )


def test_table8_against_hand_computed_values(imagenet_run):
  table, notes = published_report.imagenet_a_table(imagenet_run, mask=True)
  assert list(table.columns) == [
    "variant",
    "classes",
    "top1",
    "top5",
    "top1_norm",
    "top5_norm",
    "members",
    "examples",
  ]
  assert len(table) == 4
  for row in table.itertuples():
    np.testing.assert_allclose(
      (row.top1, row.top5, row.top1_norm, row.top5_norm),
      WANT[(row.classes, row.variant)],
      atol=1e-12,
    )
    assert row.members == 2 and row.examples == 4
  assert notes == ["1 imagenet_a labels are outside its 200 classes: never right under the mask"]
  # 1000-way only by default (docs/spec.md §3.6).
  default, _ = published_report.imagenet_a_table(imagenet_run)
  assert set(default.classes) == {1000} and len(default) == 2


def test_table8_in_measures_and_its_section(imagenet_run):
  m = registry.core(imagenet_run, imagenet_a_mask=True)
  assert set(m.tables["imagenet_a"].classes) == {1000, 200}
  assert m.config["published"]["splits"] == ["imagenet_a"]
  assert "tfds' regeneration" in m.config["published"]["note"]
  page = _page(m, imagenet_run)
  ids = re.findall(r"<section id=\"([^\"]+)\"", page)
  assert ids[ids.index("robustness") + 1] == "published"
  section = page.split("<section id=\"published\">")[1].split("</section>")[0]
  assert "000 Table 8" in section and "-60.00%" in section and "+0.00%" in section


def test_mask_without_logits_is_a_note(tmp_path):
  run = str(tmp_path)
  for (variant, k), ranks in A_RANKS.items():
    labels = np.asarray(A_LABELS)
    predictions.write(
      predictions.path(run, variant, k, "imagenet_a"),
      np.arange(4),
      labels,
      _ranked(ranks),
      {"variant": variant, "k": k, "dataset": "imagenet2012"},
      save_logits=False,
    )
    _write(run, variant, k, "validation", [1, 2], _ranked([[1], [2]]), "imagenet2012")
  loaded = collect.load_run(run, dataset=_Stub("imagenet2012", 1000, "validation"))
  table, notes = published_report.imagenet_a_table(loaded, mask=True)
  assert set(table.classes) == {1000}
  assert len(notes) == 1 and notes[0].startswith("200-class mask not computed: dense/0/imagenet_a")


def test_cifar10_1_table_against_hand_computed_values(tmp_path):
  run = str(tmp_path)
  labels_1, labels_test = np.arange(5), np.arange(4)
  wrong = lambda labels, n: np.where(np.arange(labels.size) < n, (labels + 1) % 10, labels)
  # (members' wrong examples on cifar10_1, on test): dense 1/5, 2/5 and 0/4, 2/4;
  # prune_0.9 3/5, 2/5 and 3/4, 1/4.
  plan = {
    ("dense", 0): (1, 0),
    ("dense", 1): (2, 2),
    ("prune_0.9", 0): (3, 3),
    ("prune_0.9", 1): (2, 1),
  }
  for (variant, k), (w1, wt) in plan.items():
    for split, labels, n in (("cifar10_1", labels_1, w1), ("test", labels_test, wt)):
      predictions.write(
        predictions.path(run, variant, k, split),
        np.arange(labels.size),
        labels,
        fake_run.scores_for(wrong(labels, n), 10),
        {"variant": variant, "k": k, "dataset": "cifar10"},
        save_logits=True,
      )
  loaded = collect.load_run(run, dataset=_Stub("cifar10", 10, "test"))
  table, _ = published_report.published_splits_table(loaded)
  by = table.set_index("variant")
  assert list(table.split.unique()) == ["cifar10_1"]
  # dense: (0.8 + 0.6) / 2 = 0.7 on CIFAR-10.1, (1 + 0.5) / 2 = 0.75 clean;
  # prune_0.9: (0.4 + 0.6) / 2 = 0.5, (0.25 + 0.75) / 2 = 0.5.
  np.testing.assert_allclose(by.top1, [0.7, 0.5], atol=1e-12)
  np.testing.assert_allclose(by.clean_top1, [0.75, 0.5], atol=1e-12)
  np.testing.assert_allclose(by.top1_change, [0.0, -0.2], atol=1e-12)
  np.testing.assert_allclose(by.top1_norm, [0.0, 100 * (0.5 / 0.7 - 1)], atol=1e-9)
  tables, _, settings = published_report.compute(loaded)
  assert set(tables) == {"published_splits"} and settings["splits"] == ["cifar10_1"]


def test_a_run_without_published_splits_is_unchanged(tmp_path):
  fake_run.make_digits_run(str(tmp_path), members=3)
  run = collect.load_run(str(tmp_path))
  m = registry.core(run)
  assert "published" not in m.config and "imagenet_a" not in m.tables
  assert "published_splits" not in m.tables and "published" not in m.notes
  page = _page(m, run)
  assert re.findall(r"<section id=\"([^\"]+)\"", page) == [
    sec.id for sec in registry.sections() if not sec.optional
  ]
