"""Top-1 / top-5 accuracy and per-class recall on small hand-computed populations."""

import numpy as np

from tf_forget.stats import accuracy

LABELS = np.array([0, 0, 1, 1, 1, 2])
PREDS = np.array(
  [
    [0, 1, 1, 1, 0, 2],  # correct: 1,0,1,1,0,1 -> 4/6; class recalls 1/2, 2/3, 1
    [0, 0, 2, 2, 2, 0],  # correct: 1,1,0,0,0,0 -> 2/6; class recalls 1, 0, 0
  ]
)


def test_top1_accuracy_by_hand():
  np.testing.assert_allclose(accuracy.top1_accuracy(PREDS, LABELS), [4 / 6, 2 / 6])


def test_per_class_recall_by_hand_and_missing_class_is_nan():
  r = accuracy.per_class_recall(PREDS, LABELS, num_classes=4)
  np.testing.assert_allclose(r[:, :3], [[1 / 2, 2 / 3, 1], [1, 0, 0]])
  assert np.isnan(r[:, 3]).all()


def test_per_class_recall_matches_a_loop():
  rng = np.random.default_rng(3)
  labels = rng.integers(0, 7, 300)
  preds = rng.integers(0, 7, (5, 300))
  r = accuracy.per_class_recall(preds, labels)
  for k in range(5):
    for c in range(7):
      sel = labels == c
      assert r[k, c] == np.mean(preds[k, sel] == c)


def test_topk_accuracy():
  topk = np.stack([PREDS, (PREDS + 1) % 3, (PREDS + 2) % 3], axis=2)  # every class in top-3
  np.testing.assert_allclose(accuracy.topk_accuracy(topk, LABELS, k=3), [1.0, 1.0])
  np.testing.assert_allclose(
    accuracy.topk_accuracy(topk, LABELS, k=1), accuracy.top1_accuracy(PREDS, LABELS)
  )
  # k=2: correct if label in {p, p+1 mod 3}.
  want = [np.mean((LABELS == p) | (LABELS == (p + 1) % 3)) for p in PREDS]
  np.testing.assert_allclose(accuracy.topk_accuracy(topk, LABELS, k=2), want)


def test_population_summary():
  s = accuracy.population_summary([0.5, 0.7, 0.6])
  assert s["mean"] == 0.6 and s["members"] == 3 and s["min"] == 0.5 and s["max"] == 0.7
  np.testing.assert_allclose(s["std"], np.sqrt(0.02 / 3))
  np.testing.assert_allclose(accuracy.population_summary([0.5, 0.7], ddof=1)["std"], np.sqrt(0.02))
