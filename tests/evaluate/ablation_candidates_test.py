"""The ops the causal ranking ablates (tf_forget/evaluate/ablation_candidates.py), on hand-made
rows: no model, no TensorFlow.

The rows are those of the planted range fault's CNN: CONV_2D (op 0) writes tensor 10, whose
channel 6 dominates, MAX_POOL_2D (op 1, no name the quantizer takes) passes it on as tensor 11,
which the DEPTHWISE_CONV_2D (op 2) reads; the conv's NMSE is the lowest of the named ops, so
the NMSE picks miss it and only the range diagnosis names it.
"""

from tests import import_check
from tf_forget.evaluate import ablation_candidates as candidates


def _row(index, name, nmse):
  return {
    "op_index": index,
    "tensor_name": name,
    "subsets": {"forgotten": {"nmse": nmse}, "stable": {"nmse": 0.0}},
  }


ROWS = [
  _row(0, "conv", 1e-5),
  _row(1, None, 1e-16),
  _row(2, "dw", 5e-5),
  _row(3, "pw", 3e-4),
  _row(4, "mean", 2e-4),
  _row(5, "fc", 4e-4),
  _row(6, "softmax", None),
]
WIDE = {"tensor": 10, "op_index": 0, "channel": 6, "ratio": 85.0}
POOLED = {"tensor": 11, "op_index": 1, "channel": 6, "ratio": 85.0}
TOUCHING = {0: WIDE, 1: POOLED, 2: POOLED}  # range_diagnosis.ops_touching
ORIGINS = {10: 0, 11: 0}  # range_diagnosis.origins: both tensors are the conv's fault


def _names(chosen):
  return [(c["tensor_name"], c["picked_by"]) for c in chosen]


def test_the_range_diagnosis_adds_the_op_the_nmse_misses():
  assert candidates.nmse_picks(ROWS, 2) == ["fc", "pw"]
  assert _names(candidates.choose(ROWS, TOUCHING, ORIGINS, nmse=2)) == [
    ("fc", ["nmse"]),
    ("pw", ["nmse"]),
    ("conv", ["range"]),
    ("dw", ["range"]),
  ]


def test_an_op_picked_by_both_is_ablated_once_with_both_sources():
  chosen = candidates.choose(ROWS, TOUCHING, ORIGINS, nmse=4)
  assert _names(chosen) == [
    ("fc", ["nmse"]),
    ("pw", ["nmse"]),
    ("mean", ["nmse"]),
    ("dw", ["nmse", "range"]),
    ("conv", ["range"]),
  ]


def test_each_score_is_capped_and_the_fault_s_origin_comes_first():
  assert _names(candidates.choose(ROWS, TOUCHING, ORIGINS, nmse=1, ranged=1)) == [
    ("fc", ["nmse"]),
    ("conv", ["range"]),
  ]
  many = [_row(i, f"op{i}", 1.0 / (i + 1)) for i in range(40)]
  touching = {
    i: {"tensor": 100 + i, "op_index": i, "channel": 0, "ratio": 10.0 + i} for i in range(40)
  }  # every op writes a dominated tensor, the last ones widest
  chosen = candidates.choose(many, touching)
  assert (
    len(chosen) == candidates.MAX_CANDIDATES == (candidates.NMSE_PICKS + candidates.RANGE_PICKS)
  )
  assert [c["tensor_name"] for c in chosen] == (
    [f"op{i}" for i in range(candidates.NMSE_PICKS)]
    + [f"op{39 - i}" for i in range(candidates.RANGE_PICKS)]
  )


def test_without_origins_writers_come_first_then_by_ratio():
  touching = {
    2: {"tensor": 20, "op_index": 2, "channel": 1, "ratio": 20.0},  # dw writes
    4: {"tensor": 30, "op_index": 3, "channel": 0, "ratio": 50.0},  # mean reads
    5: {"tensor": 40, "op_index": 5, "channel": 2, "ratio": 90.0},
  }  # fc writes
  assert candidates.range_picks(ROWS, touching) == ["fc", "dw", "mean"]
  assert candidates.range_picks(ROWS, touching, count=2) == ["fc", "dw"]


def test_no_dominant_channel_leaves_the_nmse_picks():
  assert _names(candidates.choose(ROWS, {})) == [
    (name, ["nmse"]) for name in candidates.nmse_picks(ROWS)
  ]
  assert candidates.nmse_picks(ROWS)[-1] == "softmax"  # no NMSE: last, still a candidate


def test_the_module_loads_no_tensorflow():
  assert (
    import_check.foreign_modules(
      "from tf_forget.evaluate import ablation_candidates", "tf_forget.evaluate"
    )
    == ""
  )
