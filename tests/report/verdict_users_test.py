"""The verdict about the user's own files (tf_forget/report/user_verdict.py): one sentence per
file, the preference rule (the user ships their own bytes when their file is as good, paired over
the test examples: tf_forget/policy/file_pairs.py, ship_rule.as_good), their rows first, the
terminal summary; and a repair that bought nothing is "no gain" and never recommended.

Planted runs: `fake_run.make_user_run` (`full_int8` breaks 2 clean examples, `user_int8`
predicts exactly what it predicts, `user_worse` breaks `USER_WORSE_EXTRA` more), so the flips
against the reference are 2, 2 and 5 by construction; hand-made verdict tables for sizes.
"""

import numpy as np
import pandas as pd
import pytest

from tests.report import fake_run
from tf_forget.policy import file_pairs
from tf_forget.policy import gates as gates_lib
from tf_forget.report import summary_terminal
from tf_forget.report import user_verdict
from tf_forget.report import verdict
from tf_forget.report import write

EXTRA = fake_run.USER_WORSE_EXTRA


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
  d = str(tmp_path_factory.mktemp("users"))
  fake_run.make_user_run(d, save_logits=True)
  return d


def _report(run_dir, variants):
  return write.build_report(run_dir, dataset_name="digits", variants=variants)


def test_identical_user_file_is_preferred_and_listed_first(run_dir):
  report = _report(run_dir, None)
  rec = report.json["recommendation"]
  assert rec["variant"] == "user_int8" and rec["instead_of"] == "full_int8"
  assert rec["file"] == "deploy/user_int8/0.tflite" and "Your own files" in rec["rule"]
  frame = report.measures.tables["verdict"]
  assert list(frame.variant) == ["user_int8", "user_worse", "dense", "full_int8"]
  assert frame.set_index("variant").loc["full_int8", "verdict"] == "pass"
  int8, worse = rec["users"]
  assert int8.startswith("Your int8 file (user_int8") and "recommended instead of tf_forget's "
  assert "full_int8" in int8 and "the same top-1 predictions on all 500 test examples" in int8
  assert "2 vs 2 flips against the reference" in int8
  # The worse file: EXTRA examples apart from the recommended file, EXTRA more flips.
  assert worse.startswith("Your worse file (user_worse") and "gate" not in worse
  assert "is eligible;" in worse
  assert f"{EXTRA} of 500 test examples apart" in worse
  # 3 more flips of 500: not significant (paired t interval of 3/500 reaches below 0), and
  # its upper end passes the half-point margin: neither "more" nor "as good".
  assert (
    "not chosen: its flips cannot be shown as few as your int8 file's (+0.60 pt [-0.08, +1.28]"
  ) in worse
  # On the first screen, before the design and the rule.
  page = report.html
  block = page[page.index('<section id="verdict">') : page.index('<section id="glossary">')]
  assert block.count('class="user-file"') == 2
  assert block.index("Your int8 file") < block.index("Design: one network") < block.index("Rule:")


def test_without_their_twin_the_worse_file_is_compared_with_tf_forgets(run_dir):
  report = _report(run_dir, ["dense", "full_int8", "user_worse"])
  rec = report.json["recommendation"]
  assert rec["variant"] == "full_int8" and "instead_of" not in rec
  (worse,) = rec["users"]
  assert (
    "against the recommended file, tf_forget's full_int8 (size not measured): "
    f"{EXTRA} of 500 test examples apart"
  ) in worse
  assert "its flips cannot be shown as few as tf_forget's full_int8's" in worse


def test_a_run_without_user_files_is_unchanged(tmp_path):
  fake_run.make_digits_run(str(tmp_path), corrupted=False)
  report = write.build_report(str(tmp_path), dataset_name="digits")
  rec = report.json["recommendation"]
  assert "users" not in rec and "instead_of" not in rec and "Your own" not in rec["rule"]
  assert list(report.measures.tables["verdict"].variant) == ["dense", "full_int8", "prune_0.9"]
  assert "path" not in report.measures.tables["divergence_examples"]  # digits: no paths
  assert 'class="user-file"' not in report.html


def _frame(rows):
  base = {
    "members": 1,
    "top1_low": -0.001,
    "top1_high": 0.001,
    "pairing": "paired examples",
    "gate": "pass",
    "reasons": "",
    "size_vs_dense": np.nan,
    "top1": 0.98,
    "top1_change": 0.0,
  }
  dense = {
    "variant": "dense",
    "file": "deploy/dense/0.tflite",
    "size_bytes": 100000.0,
    "top1": 0.98,
    "top1_change": 0.0,
    "verdict": "baseline",
    "reason": "",
    "members": 1,
  }
  return pd.DataFrame(
    [dense] + [dict(base, file=f"deploy/{r['variant']}/0.tflite", **r) for r in rows]
  )


def _facts(flips, n=10000):
  """`file_pairs.Pairs` with the given flips vs the reference (right on every example);
  variants named in `flips` disagree with each other on |flips difference| examples (one
  member)."""
  top1, share = {"dense": np.zeros((1, n), np.int64)}, {"dense": np.zeros(n)}
  for v, f in flips.items():
    pred = np.zeros(n, np.int64)
    pred[: int(f)] = 1
    top1[v], share[v] = pred[None], (pred == 1).astype(float)
  correct = {v: 1.0 - s for v, s in share.items()}
  return file_pairs.Pairs(n, share, correct, top1, {v: [0] for v in top1})


def test_rule_prefers_the_users_file_within_ten_percent_and_no_more_flips():
  # The tutorial's case: the user's dynamic-range file, 23.4 KiB, predicts what tf_forget's
  # 22.6 KiB file predicts.
  frame = _frame(
    [
      {"variant": "dynamic_int8", "size_bytes": 22.6 * 1024},
      {"variant": "user_dynamic", "size_bytes": 23.4 * 1024},
    ]
  )
  f = _facts({"dynamic_int8": 4, "user_dynamic": 4})
  rec = verdict.recommend(frame, gates_lib.Gates(), pairs=f)
  assert rec["variant"] == "user_dynamic" and rec["instead_of"] == "dynamic_int8"
  assert list(frame.verdict) == ["baseline", "pass", "recommended"]
  (line,) = user_verdict.sentences(frame, rec, f, False)
  assert "recommended instead of tf_forget's dynamic_int8 (22.6 KiB)" in line
  assert "the same top-1 predictions on all 10,000 test examples" in line
  # 15% larger: not as good; the sentence says why.
  frame = _frame(
    [
      {"variant": "dynamic_int8", "size_bytes": 20000.0},
      {"variant": "user_dynamic", "size_bytes": 23000.0},
    ]
  )
  rec = verdict.recommend(frame, gates_lib.Gates(), pairs=f)
  assert rec["variant"] == "dynamic_int8"
  assert "not chosen: it is 1.15x the size" in user_verdict.sentences(frame, rec, f, False)[0]


def test_as_good_only_when_the_paired_comparison_supports_it():
  """Of 10,000 examples: 3 more flips are not significant and their interval stays within the
  half-point margin (the t interval of 3/10,000 is about [-0.004, +0.064] pt): as good. 40
  more are significant though their interval, about [+0.28, +0.52] pt, stays near the margin:
  never "as good", and the sentence gives the numbers."""
  sizes = [
    {"variant": "full_int8", "size_bytes": 23000.0},
    {"variant": "user_int8", "size_bytes": 23100.0},
  ]
  frame = _frame(sizes)
  rec = verdict.recommend(frame, gates_lib.Gates(), pairs=_facts({"full_int8": 4, "user_int8": 7}))
  assert rec["variant"] == "user_int8"
  frame = _frame(sizes)
  f = _facts({"full_int8": 4, "user_int8": 44})
  rec = verdict.recommend(frame, gates_lib.Gates(), pairs=f)
  assert rec["variant"] == "full_int8"
  (line,) = user_verdict.sentences(frame, rec, f, False)
  assert (
    "not chosen: it flips 40 more test examples than tf_forget's full_int8 (44 vs 4 "
    "against the reference; +0.40 pt [+0.28, +0.52], paired)"
  ) in line
  assert "40 of 10,000 test examples apart" in line and "as good" not in line


def test_a_slightly_larger_file_with_significantly_fewer_flips_is_chosen():
  """The tutorial's pruned dynamic-range file flips 177 of 10,000 examples, the uint8 file 8
  and is 2.7% larger: the rule ships the uint8 file and says what the smaller one gives up."""
  frame = _frame(
    [
      {"variant": "pruned_dyn", "size_bytes": 24300.0},
      {"variant": "ptq_uint8", "size_bytes": 24956.0},
    ]
  )
  rec = verdict.recommend(
    frame, gates_lib.Gates(), pairs=_facts({"pruned_dyn": 177, "ptq_uint8": 8})
  )
  assert rec["variant"] == "ptq_uint8"
  assert rec["front"] == ["pruned_dyn", "ptq_uint8"] and rec["gives_up"] == []
  # 12% larger: beyond the 10% the rule trades for flips; the smaller file ships, and the
  # recommendation says, in numbers, what it gives up.
  frame = _frame(
    [
      {"variant": "pruned_dyn", "size_bytes": 24300.0},
      {"variant": "ptq_uint8", "size_bytes": 27216.0},
    ]
  )
  rec = verdict.recommend(
    frame, gates_lib.Gates(), pairs=_facts({"pruned_dyn": 177, "ptq_uint8": 8})
  )
  assert rec["variant"] == "pruned_dyn"
  (gives,) = rec["gives_up"]
  assert gives.startswith("pruned_dyn flips 169 more test examples than ptq_uint8 (+1.69 pt")
  assert "which is 1.12x its size" in gives


def test_a_failing_user_file_says_so_and_is_never_preferred():
  frame = _frame(
    [
      {"variant": "full_int8", "size_bytes": 23000.0},
      {
        "variant": "user_int8",
        "size_bytes": 20000.0,
        "gate": "fail",
        "reasons": "top-1 flip rate 0.07% of test examples (max 0.05%)",
      },
    ]
  )
  f = _facts({"full_int8": 4, "user_int8": 7})
  rec = verdict.recommend(frame, gates_lib.Gates(), pairs=f)
  assert rec["variant"] == "full_int8"
  (line,) = user_verdict.sentences(frame, rec, f, False)
  assert "is not eligible (fail: top-1 flip rate 0.07% of test examples (max 0.05%))" in line
  assert "not chosen" not in line


def test_a_repair_without_gain_is_never_recommended():
  frame = _frame(
    [
      {
        "variant": "full_int8",
        "size_bytes": 23000.0,
        "gate": "fail",
        "reasons": "mean KL too high",
      },
      {"variant": "full_int8~float1", "size_bytes": 80000.0},
    ]
  )
  rec = verdict.recommend(
    frame, gates_lib.Gates(), no_gain={"full_int8~float1": "no gain: broken examples 7 → 9"}
  )
  assert rec["variant"] == "dense"
  row = frame.set_index("variant").loc["full_int8~float1"]
  assert row["verdict"] == "no gain" and row["reason"].startswith("no gain: broken")


def test_terminal_summary_lists_the_users_files_first_with_their_sentences(run_dir):
  doc = _report(run_dir, None).json
  manifest = {"files": [], "gates": {"max_flip_rate": 0.0099}}
  lines = []
  summary_terminal.print_summary(doc, manifest, log=lines.append)
  rows = [ln.split()[0] for ln in lines if ln.split() and ln.split()[0] in doc["variants"]]
  assert rows == ["user_int8", "user_worse", "dense", "full_int8"]
  worse = next(ln for ln in lines if ln.startswith("user_worse"))
  # 5 flips of 500 against a bound of 0.99%: two decimals, so that the rate and the bound
  # differ (one decimal would print both as "1.0%").
  assert (
    "1.00%" in worse.split()
    and "0.4%" in next(ln for ln in lines if ln.startswith("user_int8")).split()
  )
  assert any(ln.strip().startswith("recommended: deploy/user_int8/0.tflite") for ln in lines)
  assert any(ln.strip().startswith("Your worse file") for ln in lines)
