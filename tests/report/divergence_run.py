"""Planted runs whose logits make every output-divergence number a hand computation.

Shared by `divergence_numbers_test.py` and `divergence_gates_test.py`; a test file imports the
module-scoped fixtures it uses into its own namespace (pytest finds fixtures there).

Logit rows over C classes (the `digits` test split: 500 examples, 50 per class; C = 10):
R(z) is ln 3 at class z and 0 elsewhere, so softmax p_z = 3 / (3 + 9) = 1/4 and 1/12 for each
other class; U is all zeros, softmax 1/10 each (its arg max is class 0, docs/spec.md §1.2). With
y the true label and KL(p ‖ q) = Σ_c p_c ln(p_c / q_c):

  KL(R(y) ‖ U)    = 1/4 ln(10/4) + 9/12 ln(10/12)                 = KL_RU ≈ 0.0923315
  KL(R(y) ‖ R(z)) = 1/4 ln(3) + 1/12 ln(1/3) = ln(3) / 6 (z ≠ y)  = KL_RR ≈ 0.1831020
  KL(U ‖ R(z))    = 1/10 ln(4/10) + 9/10 ln(12/10)  (any z)       = KL_UR ≈ 0.0724603
  Δp = q_y − p_y:  R(y) → U: 1/10 − 1/4 = −0.15;  R(y) → R(z): 1/12 − 1/4 = −1/6;
                   U → R(y): 1/4 − 1/10 = +0.15;  U → R(z): 1/12 − 1/10 = −1/60.

The logits are float32 (ln 3 rounded), so the tables agree with these values to ~1e-7
relative; the tests use rel = 1e-6. The runs: `make_population_run` (K = 2), `make_single_run`
(K = 1) and `biased` (digits_biased, C = 2).
"""

import json
import math
import os

import numpy as np
import pytest
from scipy import stats

from tf_forget.artifacts import predictions
from tf_forget.data import registry
from tf_forget.report import collect
from tf_forget.report import divergence_report
from tf_forget.report import write

LN3 = math.log(3.0)
KL_RU = 0.25 * math.log(2.5) + 0.75 * math.log(10 / 12)
KL_RR = LN3 / 6
KL_UR = 0.1 * math.log(0.4) + 0.9 * math.log(1.2)
DP_RR, DP_RU, DP_UR, DP_UZ = 1 / 12 - 1 / 4, 0.1 - 0.25, 0.25 - 0.1, 1 / 12 - 0.1
REL = 1e-6


def _first(labels, c, n):
  """Positions of the first n test examples of class c."""
  return np.flatnonzero(labels == c)[:n]


def _r(labels, classes=None):
  """R rows: ln 3 at `classes` (default the labels), 0 elsewhere; float32 `[N, C]`."""
  c = int(labels.max()) + 1
  x = np.zeros((labels.size, c), np.float32)
  x[np.arange(labels.size), labels if classes is None else classes] = LN3
  return x


def _with(base, rows, value):
  """`base` with the given rows replaced: value "U" (zeros) or a class z (R(z))."""
  x = base.copy()
  x[rows] = 0
  if value != "U":
    x[rows, value] = LN3
  return x


def _write(run_dir, dataset, variant, k, ids, labels, logits, save_logits=True, shuffle=None):
  if shuffle is not None:
    ids, labels, logits = ids[shuffle], labels[shuffle], logits[shuffle]
  predictions.write(
    predictions.path(run_dir, variant, k, "test"),
    ids,
    labels,
    logits,
    {
      "variant": variant,
      "member_variant": variant.split("+")[0],
      "k": k,
      "dataset": dataset,
      "split": "test",
    },
    save_logits=save_logits,
  )


def _metadata(run_dir, variant, k, doc):
  path = os.path.join(run_dir, "members", variant, str(k), "metadata.json")
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w") as f:
    json.dump(doc, f)


def make_population_run(run_dir):
  """K = 2: dense/1 is U on S1 (10 of class 5); full_int8 is R(8) on Q (20 of class 3), member
  1 also U on Q2 (5 of class 4; its files' rows shuffled); prune_0.9 (independent) U on P
  (10 of class 7); oneshot_mp_r2 member k pruned from dense 1 − k (parent links), member 1 R(8)
  on Q3 (5 of class 2); float16 without logits. Returns the position sets."""
  y = registry.get("digits").load("test")
  ids, labels = y.ids, y.labels
  sets = {
    "Q": _first(labels, 3, 20),
    "Q2": _first(labels, 4, 5),
    "S1": _first(labels, 5, 10),
    "P": _first(labels, 7, 10),
    "Q3": _first(labels, 2, 5),
  }
  base = _r(labels)
  dense = [base, _with(base, sets["S1"], "U")]
  int8 = [_with(dense[0], sets["Q"], 8), _with(_with(dense[1], sets["Q"], 8), sets["Q2"], "U")]
  oneshot = [base, _with(base, sets["Q3"], 8)]
  shuffle = np.random.default_rng(0).permutation(labels.size)
  for k in range(2):
    _write(run_dir, "digits", "dense", k, ids, labels, dense[k])
    _write(run_dir, "digits", "full_int8", k, ids, labels, int8[k], shuffle=shuffle)
    _write(run_dir, "digits", "prune_0.9", k, ids, labels, _with(base, sets["P"], "U"))
    _write(run_dir, "digits", "oneshot_mp_r2", k, ids, labels, oneshot[k])
    _write(run_dir, "digits", "float16", k, ids, labels, dense[k], save_logits=False)
    _metadata(run_dir, "dense", k, {"model_sha256": f"{k:064x}"})
    _metadata(
      run_dir,
      "oneshot_mp_r2",
      k,
      {
        "model_sha256": f"{k + 7:064x}",
        "parent": {"variant": "dense", "k": 1 - k, "model_sha256": f"{1 - k:064x}"},
      },
    )
  return sets


def make_single_run(run_dir):
  """K = 1: dense is U on S0 (10 of class 5); full_int8 is R(y) on S0's first 5 (fixed),
  R(8) on its last 5 (changed) and on Q (20 of class 3, broken); prune_0.9 is dense with U on
  P (10 of class 7, broken); float16 without logits."""
  y = registry.get("digits").load("test")
  ids, labels = y.ids, y.labels
  sets = {"Q": _first(labels, 3, 20), "S0": _first(labels, 5, 10), "P": _first(labels, 7, 10)}
  base = _r(labels)
  dense = _with(base, sets["S0"], "U")
  int8 = _with(_with(base, sets["Q"], 8), sets["S0"][5:], 8)
  _write(run_dir, "digits", "dense", 0, ids, labels, dense)
  _write(run_dir, "digits", "full_int8", 0, ids, labels, int8)
  _write(run_dir, "digits", "prune_0.9", 0, ids, labels, _with(dense, sets["P"], "U"))
  _write(run_dir, "digits", "float16", 0, ids, labels, dense, save_logits=False)
  return sets


@pytest.fixture(scope="module")
def population(tmp_path_factory):
  """`make_population_run`'s sets, its divergence tables and notes, and the loaded run."""
  run_dir = str(tmp_path_factory.mktemp("population"))
  sets = make_population_run(run_dir)
  run = collect.load_run(run_dir, dataset_name="digits")
  tables, notes, _ = divergence_report.compute(run, size=30)
  return {"sets": sets, "tables": tables, "notes": notes[divergence_report.KEY], "run": run}


@pytest.fixture(scope="module")
def single(tmp_path_factory):
  """`make_single_run`'s run directory and sets, its built report and the report's tables."""
  run_dir = str(tmp_path_factory.mktemp("single"))
  sets = make_single_run(run_dir)
  report = write.build_report(run_dir, dataset_name="digits")
  return {"run_dir": run_dir, "sets": sets, "report": report, "tables": report.measures.tables}


@pytest.fixture(scope="module")
def biased(tmp_path_factory):
  """digits_biased (C = 2), K = 1: prune_0.9 is U on the positives of Inverted = 1."""
  run_dir = str(tmp_path_factory.mktemp("biased"))
  data = registry.get("digits_biased").load("test")
  ids, labels = data.ids, data.labels
  planted = np.flatnonzero((labels == 1) & data.attributes["Inverted"])
  base = _r(labels)
  _write(run_dir, "digits_biased", "dense", 0, ids, labels, base)
  _write(run_dir, "digits_biased", "prune_0.9", 0, ids, labels, _with(base, planted, "U"))
  run = collect.load_run(run_dir, dataset_name="digits_biased")
  tables, _, _ = divergence_report.compute(run)
  return {"tables": tables, "planted": planted, "attributes": data.attributes, "n": ids.size}


def row(table, variant):
  """The one row of `variant` in `table`."""
  rows = table[table.variant == variant]
  assert len(rows) == 1, (variant, len(rows))
  return rows.iloc[0]


def t_interval(values):
  """mean ± t_{0.975, n−1} · s / √n of a value vector (numpy / scipy)."""
  v = np.asarray(values, np.float64)
  half = stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
  return v.mean(), v.mean() - half, v.mean() + half
