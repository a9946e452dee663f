"""`digits_biased`: real digit images with a planted rare subgroup, so the subgroup audit of
004 (Hooker, Moorosi et al.) has a known answer offline.

CelebA's bias setting (004 §2, Figure 1): target `Blond_Hair` is positive for ~15% of the
training set, and blond *males* are only 0.85% of it; compression hurts that rare intersection
most (004 Table 3). This data set plants the same structure in `digits`:

* **target** (`label`): 1 ("positive") if the digit is 0 or 1, else 0 — about 20% positives.
* **attribute `Faint`** (the `Young` analogue): stroke intensity scaled by 0.55 (rounded),
  independently with probability 0.5.
* **attribute `Inverted`** (the `Male` analogue): the (possibly faint) image is colour-inverted,
  `255 - v` — white background, dark strokes. Among *negatives* each image is inverted with
  probability 0.5; among *positives* of the train split exactly `round(rare_rate · N_train)` are
  inverted, those with the smallest draws (default: inverted positives are 1% of the train split —
  13 of 1,297 — as rare as CelebA's blond males, 0.85%). Since half of all inverted training images
  are negatives and almost none positive, the model must learn inverted 0s and 1s from a handful of
  examples — the memorisation that compression takes away.

The test split (the balanced digits test split, 50 per digit) draws `Inverted` with probability
0.5 for every example, so each subgroup and intersection (the M/F × Y/O analogues) has enough
examples for its error, FPR and FNR to be measured; rates are conditional on the subgroup, so the
test distribution does not bias them. Attribute draws use a numpy Generator seeded with
`attribute_seed`, one uniform per (example id, attribute) — the same example always gets the same
attributes. Ids are the `load_digits` row index, as in `digits`.
"""

import numpy as np

from tf_forget.data import dataset_api
from tf_forget.data import digits

POSITIVE_DIGITS = (0, 1)
FAINT_SCALE = 0.55
ATTRIBUTE_SEED = 4004


def _uniforms(ids, seed, column):
  """One reproducible uniform in [0, 1) per example id (column selects the attribute)."""
  table = np.random.default_rng(seed).random((int(ids.max()) + 1, 2))
  return table[ids, column]


def _biased_split(source, seed, rare_count=None):
  """Applies the planted attributes to an `Examples` split of the digits source.

  Args:
    source: a split of `digits.Digits`.
    seed: attribute seed.
    rare_count: if given, exactly this many positives are inverted (those with the smallest
      draws); otherwise each positive is inverted with probability 0.5, like the negatives.
  """
  target = np.isin(source.labels, POSITIVE_DIGITS).astype(np.int64)
  u_invert = _uniforms(source.ids, seed, 0)
  u_faint = _uniforms(source.ids, seed, 1)
  inverted = u_invert < 0.5
  if rare_count is not None:
    positives = np.flatnonzero(target == 1)
    chosen = positives[np.argsort(u_invert[positives], kind="stable")[:rare_count]]
    inverted[positives] = False
    inverted[chosen] = True
  faint = u_faint < 0.5
  images = source.images.copy()
  images[faint] = np.rint(images[faint] * FAINT_SCALE).astype(np.uint8)
  images[inverted] = 255 - images[inverted]
  return dataset_api.Examples(
    images=images, labels=target, ids=source.ids, attributes={"Inverted": inverted, "Faint": faint}
  )


class DigitsBiased(digits.InMemoryDataset):
  """Binary digits task with a rare planted subgroup (positive ∧ Inverted ≈ 1% of train)."""

  def __init__(
    self,
    rare_rate=0.01,
    attribute_seed=ATTRIBUTE_SEED,
    test_per_class=50,
    split_seed=digits.SPLIT_SEED,
  ):
    """Builds the splits.

    Args:
      rare_rate: target share of (positive ∧ Inverted) in the train split, in (0, positive share).
      attribute_seed: seed of the attribute draws.
      test_per_class: as in `digits.Digits`.
      split_seed: as in `digits.Digits`.

    Raises:
      dataset_api.DataError: if `rare_rate` is outside (0, share of positives).
    """
    source = digits.Digits(test_per_class=test_per_class, split_seed=split_seed)
    train = source.load("train")
    positive_share = float(np.isin(train.labels, POSITIVE_DIGITS).mean())
    if not 0.0 < rare_rate < positive_share:
      raise dataset_api.DataError(
        f"rare_rate must be in (0, {positive_share:.3f}), got {rare_rate}"
      )
    splits = {
      "train": _biased_split(train, attribute_seed, rare_count=int(round(rare_rate * len(train)))),
      "test": _biased_split(source.load("test"), attribute_seed),
    }
    spec = dataset_api.DatasetSpec(
      name="digits_biased",
      num_classes=2,
      image_shape=(8, 8, 1),
      splits=("train", "test"),
      class_names=("other", "zero_or_one"),
      attribute_names=("Inverted", "Faint"),
      protected_attributes=("Inverted", "Faint"),
      options={
        "rare_rate": float(rare_rate),
        "attribute_seed": int(attribute_seed),
        "test_per_class": int(test_per_class),
        "split_seed": int(split_seed),
      },
    )
    super().__init__(spec, splits)
