"""002's MNIST protocol wired end to end on a 200-image slice of the real MNIST (no accuracy).

The slice (the first 200 train and 100 test images of the IDX files) is written as IDX files in
the test; its sizes and checksums stand in for the database's. The audit runs preset
`lenet5_002` with MP at two ratios in this process (a few hundred steps), then the reproduction
tool reduces the run to its per-network table and page. The table's α must be the report's
(`tables/oneshot_alpha.csv`): the page and the report read the same numbers.
"""

import gzip
import hashlib
import json
import os
import shutil
import struct
import sys

import numpy as np
import pandas as pd
import pytest

from tests import audit_main
from tests import binary_main
from tf_forget.data import idx_files
from tf_forget.report import reproduction_002

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
SHARED_MNIST = os.path.join(os.path.dirname(ROOT), "shared", "data", "mnist")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import reproduce_002

RATIOS = (2, 50)
SIZES = {"train": 200, "test": 100}


def _idx(array):
  array = np.asarray(array, np.uint8)
  return (
    bytes([0, 0, 8, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape) + array.tobytes()
  )


def _slice(directory):
  """Writes the slice's four .gz files; returns {stem: (None, md5 of the raw bytes)}."""
  splits, _ = idx_files.load(SHARED_MNIST, "mnist")
  sums = {}
  os.makedirs(directory)
  for split, (image_stem, label_stem) in idx_files.FILES.items():
    images, labels = splits[split]
    n = SIZES[split]
    for stem, array in ((image_stem, images[:n, ..., 0]), (label_stem, labels[:n])):
      raw = _idx(array)
      with open(os.path.join(directory, stem + ".gz"), "wb") as f:
        f.write(gzip.compress(raw, mtime=0))
      sums[stem] = (None, hashlib.md5(raw).hexdigest())
  return sums


@pytest.fixture(scope="module")
def run(tmp_path_factory):
  if not os.path.isdir(SHARED_MNIST):
    pytest.skip("the real MNIST files are not beside the checkout")
  base = tmp_path_factory.mktemp("mnist002")
  sums = _slice(str(base / "mnist"))
  with pytest.MonkeyPatch.context() as mp:
    mp.setattr(idx_files, "SIZES", SIZES)
    mp.setitem(idx_files.CHECKSUMS, "mnist", sums)
    out = base / "run"
    code = binary_main.run_main(
      audit_main.main,
      "audit",
      dataset="mnist",
      data_dir=str(base / "mnist"),
      preset="lenet5_002",
      pruning=["oneshot"],
      algorithms=["mp"],
      ratios=[str(r) for r in RATIOS],
      exclude_classifier=True,
      ratio_over="all",
      members=2,
      steps=421,
      finetune="1@0.01",
      quantizations=["float16"],
      pruned_quantizations=["float16"],
      corruptions=["none"],
      noise_levels=["none"],
      deploy_encoding="plain",
      executor="inline",
      out=str(out),
    )
    assert code in (0, audit_main.GATE_FAILED), code
    mp.setattr(reproduction_002, "RATIOS", RATIOS)
    reproduce_002.from_run(str(out), str(base / "page"))
  return out, base / "page"


def test_parents_keep_their_best_epoch_and_children_follow_the_published_protocol(run):
  out, _ = run
  with open(out / "members" / "dense" / "0" / "metadata.json") as f:
    meta = json.load(f)
  sel = meta["epoch_selection"]
  assert (sel["train_examples"], sel["validation_examples"]) == (180, 20)
  assert sel["best_epoch"] == 1 and len(sel["validation_data_loss"]) == 1  # 421 steps: 1 chunk
  assert meta["dataset_options"]["idx_md5"]["t10k-labels-idx1-ubyte"]
  with open(out / "members" / "oneshot_mp_r50" / "1" / "metadata.json") as f:
    child = json.load(f)
  pruning = child["pruning"]
  assert (pruning["ratio_over"], pruning["exclude_classifier"]) == ("all", True)
  assert pruning["compression"]["achieved_ratio"] == pytest.approx(50, rel=1e-3)
  assert child["parent"]["k"] == 1


def test_the_table_and_the_report_read_the_same_alpha(run):
  out, page = run
  table = pd.read_csv(page / reproduce_002.CSV)
  assert sorted(table.ratio.unique()) == [1, 2, 50]
  assert len(table) == 2 * 3 and table.model.tolist() == [0, 0, 0, 1, 1, 1]
  assert [c for c in table.columns if c.startswith("recall_")] == [f"recall_{c}" for c in range(10)]
  report = pd.read_csv(out / "tables" / "oneshot_alpha.csv").set_index("ratio")
  result = reproduction_002.compute(table)
  for ratio in RATIOS:
    assert result["alpha"][ratio]["mean"] == pytest.approx(
      report.loc[ratio, "mean_alpha"], abs=1e-5
    )
    assert result["recall_variance"][ratio]["mean"] == pytest.approx(
      report.loc[ratio, "recall_variance_t"], abs=1e-6
    )
  assert result["accuracy"]["mean"] == pytest.approx(report["mean_accuracy_0"].iloc[0], abs=1e-6)


def test_the_page_is_the_csvs_page(run, tmp_path):
  page = tmp_path / "page"
  shutil.copytree(run[1], page)
  assert reproduce_002.main(["--check", str(page)]) == 0
  text = (page / reproduce_002.PAGE).read_text()
  assert "REPRO_MEMBERS=2" in text and "**2 parents**" in text
  (page / reproduce_002.CSV).write_text(
    (page / reproduce_002.CSV).read_text().replace("0.", "0.1", 1)
  )
  assert reproduce_002.main(["--check", str(page)]) == 1
