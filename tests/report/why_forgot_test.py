"""The "why" in words (tf_forget/report/words/why_forgot.py), on hand-made analyses.

An ablation over 40 forgotten examples (at most 1,000 of the file's 90 are ablated; here 40)
of which the plain file broke 30: the top op recovered 3 and caused 28 alone, and reads a
tensor whose channel 6 spans 85x the median: its sentence must say "activation range", those
counts against the ablated examples (not the 90 forgotten), and the channel. A user's file gets
the dB sentence and says what its ranking cannot see; an error-statistic analysis says so. Each
ablated op says what picked it (its NMSE, the range diagnosis), in words and in the table.
"""

from tf_forget.report.words import why_forgot

RANGE = {
  "tensor": 7,
  "tensor_name": "sequential/conv2d/Relu",
  "op_index": 1,
  "op_name": "CONV_2D",
  "channel": 6,
  "channels": 16,
  "ratio": 85.2,
  "levels_others": 3.1,
  "levels_channel": 255.0,
}


def _row(op, index, name, rank, **extra):
  return {
    "op_name": op,
    "op_index": index,
    "tensor_name": name,
    "rank": rank,
    "nmse_forgotten": 0.1,
    "nmse_stable": 0.01,
    "excess": 0.09,
    "snr_db_forgotten": 10.0,
    "snr_db_stable": 20.0,
    **extra,
  }


def _doc(**extra):
  return {
    "member_variant": "dense",
    "k": 0,
    "format": "full_int8",
    "basis": "forgotten",
    "subsets": {"forgotten": {"count": 90}},
    **extra,
  }


def test_an_ablated_range_fault_in_words():
  doc = _doc(
    ranked_by="ablation",
    ablation={"plain": {"broken_forgotten": 30}, "ablated": 6, "forgotten": 40, "stable": 250},
    ranges=[RANGE],
    ranking=[
      _row(
        "CONV_2D",
        1,
        "sequential/conv2d/Relu",
        1,
        evidence="ablation",
        fault="range",
        recovered=3,
        caused=28,
        range=RANGE,
        nmse_rank=4,
      ),
      _row("FULLY_CONNECTED", 5, "head", 2, evidence="error statistic", nmse_rank=1),
    ],
  )
  lines = why_forgot.sentences(doc)
  assert lines[0].startswith("Why full_int8/0 forgot (ranked by ablation: each of the 6 ops")
  assert "40 forgotten and 250 stable examples" in lines[0]
  assert lines[1] == (
    "CONV_2D (sequential/conv2d): its activation range — kept alone in float it recovers 3 "
    "of the 30 examples the file broke, quantized alone (everything else float) it breaks "
    "28 of the 40 forgotten; CONV_2D (sequential/conv2d) output channel 6 spans 85x the "
    "median channel: per-tensor int8 leaves the other 15 channels about 3 levels."
  )
  assert len(lines) == 2  # the range is told once, with the op that touches it
  rows = why_forgot.layer_rows(doc, kept={"head"})
  assert [(r["rank"], r["nmse_rank"], r["evidence"], r["kept"]) for r in rows] == [
    (1, 4, "ablation", False),
    (2, 1, "error statistic", True),
  ]


def test_each_ablated_op_says_what_picked_it():
  # 7 ops ablated: 6 NMSE picks and 2 ops the range diagnosis named, one of them both.
  doc = _doc(
    ranked_by="ablation",
    ablation={
      "plain": {"broken_forgotten": 30},
      "ablated": 7,
      "picked_nmse": 6,
      "picked_range": 2,
      "forgotten": 40,
      "stable": 250,
    },
    ranges=[RANGE],
    ranking=[
      _row(
        "CONV_2D",
        1,
        "sequential/conv2d/Relu",
        1,
        evidence="ablation",
        fault="range",
        recovered=0,
        caused=28,
        range=RANGE,
        nmse_rank=7,
        picked_by=["range"],
      ),
      _row(
        "DEPTHWISE_CONV_2D",
        2,
        "dw",
        2,
        evidence="ablation",
        fault="range",
        recovered=1,
        caused=27,
        range=RANGE,
        nmse_rank=3,
        picked_by=["nmse", "range"],
      ),
      _row(
        "FULLY_CONNECTED",
        5,
        "head",
        3,
        evidence="ablation",
        fault="inherited",
        recovered=0,
        caused=1,
        nmse_rank=1,
        picked_by=["nmse"],
      ),
      _row("MEAN", 4, "mean", 8, nmse_rank=8, evidence="error statistic", picked_by=None),
    ],
  )
  lines = why_forgot.sentences(doc)
  assert lines[0].startswith(
    "Why full_int8/0 forgot (ranked by ablation: each of the 7 ops of largest error (6) or "
    "named by the range diagnosis (2) quantized alone and kept alone in float"
  )
  assert lines[1].startswith(
    "CONV_2D (sequential/conv2d), picked by the range diagnosis: its "
    "activation range — kept alone in float it recovers 0 of the 30"
  )
  assert lines[2].startswith(
    "DEPTHWISE_CONV_2D, picked by its NMSE and the range diagnosis: its activation range"
  )
  rows = why_forgot.layer_rows(doc, kept=set())
  assert [r["picked_by"] for r in rows] == [
    "range diagnosis",
    "NMSE pick, range diagnosis",
    "NMSE pick",
    None,
  ]


def test_a_user_file_and_an_error_statistic_say_what_they_are():
  user = _doc(
    format="user_int8",
    ranked_by="error statistic",
    ranking=[_row("CONV_2D", 3, "c", 1, match="name", growth_db_forgotten=27.96)],
  )
  (line,) = why_forgot.sentences(user)
  assert line.startswith(
    "Where user_int8/0's error grows most (on the forgotten examples): "
    "CONV_2D, +28.0 dB over its inputs."
  )
  assert "not which op's quantization caused the forgetting" in line
  plain = _doc(ranked_by="error statistic", ranking=[_row("CONV_2D", 3, "c", 1)])
  assert why_forgot.sentences(plain) == [
    "Where full_int8/0 errs most (on the forgotten examples): CONV_2D, NMSE 0.1 (an error "
    "statistic, not an ablation)."
  ]
  assert why_forgot.sentences(_doc(error="could not run", ranking=[])) == []
