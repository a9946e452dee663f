"""Subgroup error, FPR and FNR and CIE over-indexing of 004 §2 and §3.2 (docs/spec.md §4.2-4.4).

* `subgroup_masks`: aggregate; each value of each protected attribute (Male -> M / F,
  Young -> Y / O); each intersection of two protected attributes (MY, MO, FY, FO).
* `subgroup_rates`: per-member error, FPR = FP / actual negatives, FNR = FN / actual
  positives within each subgroup, positive = target 1 (004 Table 5); NaN where undefined.
* `member_averaged_rates`: the mean over the first K members (K = 10 by default, docs/spec.md §1.5).
* `normalized_difference`: 100 · (r_t − r_0) / r_0 (004 Table 3 bottom rows, Table 4).
* `subgroup_table`: 004 Tables 3 and 5 for one compressed variant.
* `over_indexing`: share of each attribute among CIEs / its share in the training set
  (004 Figure 2; docs/spec.md §4.4).

Paper: 004 (docs/papers.md).
"""

import itertools

import numpy as np
import pandas as pd

from tf_forget.stats import validate

# Short names of the values of 004's protected attributes (value True, value False).
SHORT_NAMES = {"Male": ("M", "F"), "Young": ("Y", "O")}
PROTECTED = ("Male", "Young")
METRICS = ("error", "fpr", "fnr")


def _value_name(attribute, value):
  if attribute in SHORT_NAMES:
    return SHORT_NAMES[attribute][0 if value else 1]
  return f"{attribute}={int(value)}"


def _join(a, b):
  return a + b if len(a) == 1 and len(b) == 1 else f"{a}&{b}"


def subgroup_masks(attributes, num_examples, protected=PROTECTED):
  """Boolean masks of 004's subgroups (004 §2.1, Table 3; docs/spec.md §4.2).

  Args:
    attributes: DataFrame or dict of boolean arrays `[examples]`.
    num_examples: number of examples.
    protected: names of the protected attributes (004: "Male", "Young").

  Returns:
    dict name -> bool `[examples]`, ordered: "aggregate"; for each protected attribute its
    True then False value ("M", "F", "Y", "O"); then for each pair of protected attributes
    the four intersections ("MY", "MO", "FY", "FO"). Attributes without a short name are
    named "attr=1" / "attr=0" and "a=1&b=0".

  Raises:
    validate.StatsInputError: a protected attribute is missing or malformed.
  """
  attrs = validate.check_attributes(attributes, num_examples)
  for a in protected:
    if a not in attrs:
      raise validate.StatsInputError(f"attributes lack protected attribute {a!r}")
  masks = {"aggregate": np.ones(num_examples, dtype=bool)}
  values = {}
  for a in protected:
    values[a] = [(_value_name(a, True), attrs[a]), (_value_name(a, False), ~attrs[a])]
    masks.update(values[a])
  for a, b in itertools.combinations(protected, 2):
    for (na, ma), (nb, mb) in itertools.product(values[a], values[b]):
      masks[_join(na, nb)] = ma & mb
  return masks


def subgroup_rates(predictions, labels, masks, positive=1):
  """Error, FPR and FNR of each member in each subgroup (004 Table 5; docs/spec.md §4.2).

  Args:
    predictions: int `[members, examples]` top-1 labels.
    labels: int `[examples]` true labels (positive class = `positive`, 004: Blond_Hair = 1).
    masks: dict name -> bool `[examples]` (e.g. `subgroup_masks`).
    positive: the positive label.

  Returns:
    dict metric ("error", "fpr", "fnr") -> float `[members, groups]` in the order of
    `masks`. FPR is NaN in a subgroup without actual negatives, FNR without actual
    positives, error in an empty subgroup (never 0).
  """
  labels = validate.check_labels(labels)
  preds = validate.check_predictions(predictions, labels.shape[0])
  g = np.stack([np.asarray(m, dtype=bool) for m in masks.values()], axis=1)
  if g.shape[0] != labels.shape[0]:
    raise validate.StatsInputError(
      f"subgroup masks have {g.shape[0]} examples but labels have {labels.shape[0]}"
    )
  g = g.astype(np.float64)
  pos = labels == positive
  pred_pos = preds == positive
  wrong = (preds != labels[None, :]).astype(np.float64)
  fp = (pred_pos & ~pos[None, :]).astype(np.float64)
  fn = (~pred_pos & pos[None, :]).astype(np.float64)
  n_all = g.sum(axis=0)
  n_neg = (~pos).astype(np.float64) @ g
  n_pos = pos.astype(np.float64) @ g
  with np.errstate(invalid="ignore", divide="ignore"):
    out = {
      "error": np.where(n_all > 0, (wrong @ g) / n_all, np.nan),
      "fpr": np.where(n_neg > 0, (fp @ g) / n_neg, np.nan),
      "fnr": np.where(n_pos > 0, (fn @ g) / n_pos, np.nan),
    }
  return out


def member_averaged_rates(rates, num_members=10):
  """Mean of per-member rates over the first `num_members` members (docs/spec.md §1.5, §4.2).

  004 Tables 3 and 5 "average performance over 10 models". With fewer members than
  `num_members`, all members are used; `num_members=None` uses all.

  Args:
    rates: dict metric -> float `[members, groups]` from `subgroup_rates`.
    num_members: members to average (first ones by index).

  Returns:
    dict metric -> float `[groups]`.
  """
  out = {}
  for metric, r in rates.items():
    r = np.asarray(r, dtype=np.float64)
    k = r.shape[0] if num_members is None else min(num_members, r.shape[0])
    out[metric] = r[:k].mean(axis=0)
  return out


def normalized_difference(rate_t, rate_0):
  """Normalized difference 100 · (r_t − r_0) / r_0 (004 Table 3, Table 4; docs/spec.md §4.3).

  Args:
    rate_t: float array, member-averaged rates of the compressed population.
    rate_0: float array of the same shape, of the non-compressed population.

  Returns:
    float array in percent; NaN where r_0 is 0 or NaN (undefined, shown as "n/a").
  """
  rt = np.asarray(rate_t, dtype=np.float64)
  r0 = np.asarray(rate_0, dtype=np.float64)
  with np.errstate(invalid="ignore", divide="ignore"):
    return np.where(r0 != 0, 100.0 * (rt - r0) / np.where(r0 != 0, r0, 1.0), np.nan)


def subgroup_table(
  predictions_0, predictions_t, labels, attributes, protected=PROTECTED, num_members=10, positive=1
):
  """004 Tables 5 (absolute rates) and 3 (normalized difference) for one variant.

  Args:
    predictions_0: int `[K0, examples]` baseline population.
    predictions_t: int `[Kt, examples]` compressed population.
    labels: int `[examples]`.
    attributes: DataFrame or dict of boolean arrays `[examples]`.
    protected: protected attribute names.
    num_members: members averaged (first ones; docs/spec.md §1.5).
    positive: positive label.

  Returns:
    DataFrame indexed by (`model` in {"baseline", "compressed", "normalized_difference"},
    `metric` in {"error", "fpr", "fnr"}), one column per subgroup. Rates are fractions;
    the normalized difference is in percent; undefined cells are NaN.
  """
  labels = validate.check_labels(labels)
  masks = subgroup_masks(attributes, labels.shape[0], protected)
  r0 = member_averaged_rates(subgroup_rates(predictions_0, labels, masks, positive), num_members)
  rt = member_averaged_rates(subgroup_rates(predictions_t, labels, masks, positive), num_members)
  rows, index = [], []
  for model, source in (("baseline", r0), ("compressed", rt)):
    for metric in METRICS:
      rows.append(source[metric])
      index.append((model, metric))
  for metric in METRICS:
    rows.append(normalized_difference(rt[metric], r0[metric]))
    index.append(("normalized_difference", metric))
  return pd.DataFrame(
    np.stack(rows),
    columns=list(masks),
    index=pd.MultiIndex.from_tuples(index, names=["model", "metric"]),
  )


def attribute_shares(attributes, num_examples=None):
  """Share of examples that have each attribute (004 Figure 1 / Figure 2 x-axis).

  Args:
    attributes: DataFrame or dict of boolean arrays `[examples]`.
    num_examples: expected length (default: that of the first attribute).

  Returns:
    pandas Series attribute -> share in [0, 1].
  """
  if num_examples is None:
    first = (
      attributes[attributes.columns[0]]
      if isinstance(attributes, pd.DataFrame)
      else next(iter(attributes.values()))
      if isinstance(attributes, dict)
      else None
    )
    num_examples = len(first) if first is not None else 0
  attrs = validate.check_attributes(attributes, num_examples)
  if num_examples == 0:
    raise validate.StatsInputError("attributes have no examples")
  return pd.Series({k: float(v.mean()) for k, v in attrs.items()}, name="share")


def over_indexing(train_attributes, test_attributes, cie_mask):
  """Relative representation of each attribute among CIEs (004 Figure 2; docs/spec.md §4.4).

  For each attribute a: share of a among the selected CIEs divided by the share of a in
  the training set (1 = proportional; > 1 = over-indexed). Default CIEs in docs/spec.md §4.4 are
  Taxicab at percentile 80 (`cie.select_percentile(d, 80)`).

  Args:
    train_attributes: DataFrame / dict of boolean arrays over the training set, or a
      pandas Series / dict attribute -> training share.
    test_attributes: DataFrame / dict of boolean arrays `[examples]` of the test set.
    cie_mask: bool `[examples]` selected CIEs.

  Returns:
    DataFrame indexed by attribute with columns `train_share`, `cie_share`,
    `relative_representation` (NaN where the training share is 0), `cie_count`.

  Raises:
    validate.StatsInputError: no CIE selected, attributes missing from the training data.
  """
  mask = np.asarray(cie_mask, dtype=bool)
  if mask.ndim != 1:
    raise validate.StatsInputError(f"cie_mask must be 1-D, got shape {mask.shape}")
  if not mask.any():
    raise validate.StatsInputError("cie_mask selects no example")
  test = validate.check_attributes(test_attributes, mask.shape[0], "test_attributes")
  if isinstance(train_attributes, pd.Series) or (
    isinstance(train_attributes, dict) and all(np.ndim(v) == 0 for v in train_attributes.values())
  ):
    train = pd.Series(train_attributes, dtype=np.float64)
  else:
    train = attribute_shares(train_attributes)
  missing = [a for a in test if a not in train.index]
  if missing:
    raise validate.StatsInputError(f"training shares missing for attributes {missing}")
  names = list(test)
  selected = np.stack([test[a] for a in names], axis=1)[mask]  # [CIEs, attributes]
  cie_count = selected.sum(axis=0)
  cie_share = cie_count / selected.shape[0]
  train_share = train.loc[names].to_numpy(dtype=np.float64)
  with np.errstate(invalid="ignore", divide="ignore"):
    rel = np.where(train_share > 0, cie_share / np.where(train_share > 0, train_share, 1), np.nan)
  return pd.DataFrame(
    {
      "train_share": train_share,
      "cie_share": cie_share,
      "relative_representation": rel,
      "cie_count": cie_count,
    },
    index=pd.Index(names, name="attribute"),
  )
