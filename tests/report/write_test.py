"""write_report end to end on the fake runs: files, JSON = stats outputs, self-contained HTML,
determinism, bad input -> one-line error with no partial output, and a failed or killed re-run
that keeps the previous report whole."""

import errno
import glob
import json
import os
import re
import shutil

import numpy as np
import pandas as pd
import pytest

from tests.report import fake_run
from tf_forget.artifacts import layout
from tf_forget.artifacts import swap
from tf_forget.report import collect
from tf_forget.report import write
from tf_forget.report.units import registry
from tf_forget.stats import accuracy
from tf_forget.stats import class_level
from tf_forget.stats import exemplars
from tf_forget.stats import recall_distortion
from tf_forget.stats import subgroups

CONFIG = {"dataset": "test", "members": 5, "variants": ["dense", "prune_0.9", "full_int8"]}


def _population(run_dir, variant, split="test"):
  """(top1 [K, N], labels [N]) read straight from the npz files, independently of collect."""
  paths = sorted(glob.glob(os.path.join(run_dir, "predictions", variant, "*", f"{split}.npz")))
  tops, labels = [], None
  for p in paths:
    with np.load(p, allow_pickle=False) as d:
      tops.append(d["topk"][:, 0])
      labels = d["labels"]
  return np.stack(tops), labels


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
  root = tmp_path_factory.mktemp("digits")
  run_dir, out = str(root / "run"), str(root / "out")
  fake_run.make_digits_run(run_dir)
  doc = write.write_report(run_dir, out, CONFIG)
  return run_dir, out, doc


@pytest.fixture(scope="module")
def biased(tmp_path_factory):
  root = tmp_path_factory.mktemp("biased")
  run_dir, out = str(root / "run"), str(root / "out")
  fake_run.make_biased_run(run_dir)
  doc = write.write_report(run_dir, out, CONFIG)
  return run_dir, out, doc


def test_files_and_schema(digits):
  _, out, doc = digits
  assert sorted(os.listdir(out)) == [
    ".tf_forget.report.files.json",
    "report.html",
    "report.json",
    "tables",
  ]
  # What the swap put in place is recorded (a re-run refuses to delete a user's file in
  # tables/): exactly the files written, the listing itself aside.
  with open(os.path.join(out, ".tf_forget.report.files.json")) as f:
    recorded = json.load(f)["files"]
  assert sorted(recorded) == sorted(
    [f"tables/{n}" for n in os.listdir(os.path.join(out, "tables"))]
    + ["report.html", "report.json"]
  )
  with open(os.path.join(out, "report.json")) as f:
    on_disk = json.load(f)
  assert on_disk == doc
  assert doc["schema_version"] == write.SCHEMA_VERSION and doc["config"] == CONFIG
  assert doc["tools"]["numpy"] == np.__version__ and doc["tools"]["pandas"] == pd.__version__
  names = sorted(f[:-4] for f in os.listdir(os.path.join(out, "tables")))
  assert (
    names
    == sorted(doc["tables"])
    == [
      "cie_accuracy",
      "cie_annotation",
      "class_level",
      "divergence",
      "divergence_classes",
      "divergence_examples",
      "gallery",
      "overview",
      "pie",
      "pie_accuracy",
      "recall_distortion",
      "robustness",
      "topline",
      "verdict",
    ]
  )
  gallery = pd.read_csv(os.path.join(out, "tables", "gallery.csv"))
  assert (gallery.variant == "prune_0.9").sum() == 12 and (gallery.distance == 10).all()
  overview = pd.read_csv(os.path.join(out, "tables", "overview.csv")).set_index("variant")
  assert overview.loc["prune_0.9", "significant_classes"] == 6
  pie = pd.read_csv(os.path.join(out, "tables", "pie.csv")).set_index("variant")
  assert pie.loc["prune_0.9", "pie_count"] == 40
  assert doc["variants"]["prune_0.9"]["pie_count"] == 40
  assert doc["variants"]["prune_0.9"]["significant_classes"] == 6


def test_json_numbers_equal_the_stats_library(biased):
  run_dir, _, doc = biased
  p0, labels = _population(run_dir, "dense")
  pt, _ = _population(run_dir, "prune_0.9")
  r0, a0 = accuracy.per_class_recall(p0, labels, 2), accuracy.top1_accuracy(p0, labels)
  rt, at = accuracy.per_class_recall(pt, labels, 2), accuracy.top1_accuracy(pt, labels)
  expected = class_level.class_level_report(r0, a0, rt, at)
  rows = [r for r in doc["tables"]["class_level"] if r["variant"] == "prune_0.9"]
  for r in rows:
    e = expected.loc[r["class"]]
    assert r["p_value"] == pytest.approx(e.p_value, rel=1e-12)
    assert r["normalized_recall_difference"] == pytest.approx(e.normalized_recall_difference)
    assert r["relative_recall_difference"] == pytest.approx(e.relative_recall_difference)
    assert r["significant"] == bool(e.significant)
  pie = exemplars.pruning_identified_exemplars(p0, pt, 2)
  assert doc["variants"]["prune_0.9"]["pie_count"] == pie["count"]
  rd = recall_distortion.recall_distortion_summary(r0, a0, rt, at)
  got = [a if a is not None else np.nan for a in doc["variants"]["prune_0.9"]["alphas"]]
  np.testing.assert_allclose(got, rd["alphas"], rtol=1e-12)
  from tf_forget.data import registry

  attrs = registry.get("digits_biased").load("test").attributes
  table = subgroups.subgroup_table(p0, pt, labels, attrs, protected=("Inverted", "Faint"))
  row = next(
    r
    for r in doc["tables"]["subgroups"]
    if r["variant"] == "prune_0.9"
    and r["model"] == "normalized_difference"
    and r["metric"] == "fnr"
  )
  for group in table.columns:
    e = table.loc[("normalized_difference", "fnr"), group]
    assert (row[group] is None) == bool(np.isnan(e))
    if row[group] is not None:
      assert row[group] == pytest.approx(e, rel=1e-12)


def test_html_is_self_contained_with_every_section_and_the_numbers(digits, biased):
  for _, out, doc in (digits, biased):
    with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
      page = f.read()
    assert "http://" not in page and "https://" not in page and "src=\"file" not in page
    # One inline script (table sorting / filtering), nothing loaded from anywhere.
    assert not re.search(r"<(link|iframe)|<script[^>]*src", page)
    assert page.count("<script>") == 1
    ids = re.findall(r"<section id=\"([^\"]+)\"", page)
    assert ids == [sec.id for sec in registry.sections() if not sec.optional]
    for sid in ("topline", "class-level", "pie", "recall-distortion"):
      body = page.split(f"<section id=\"{sid}\">")[1].split("</section>")[0]
      assert "data:image/png;base64," in body, sid
  _, out, doc = digits
  page = open(os.path.join(out, "report.html"), encoding="utf-8").read()
  assert "prune_0.9: 6 significant classes (6 after Benjamini-Hochberg; 5 gained, 1 lost" in page
  verdict = page.split("<section id=\"verdict\">")[1].split("</section>")[0]
  assert "<p class=\"recommendation\">" in verdict and "table class=\"verdict" in verdict
  assert doc["recommendation"]["file"] in verdict
  assert ">40<" in page  # #PIE in the PIE table
  assert "Not shown: data set &#x27;digits&#x27; has no protected attributes" in page
  _, out, doc = biased
  page = open(os.path.join(out, "report.html"), encoding="utf-8").read()
  gallery = page.split("<section id=\"gallery\">")[1]
  assert gallery.count("class=\"gal-card ") == 12  # prune_0.9's top 12; full_int8 has none


def test_same_inputs_same_report(digits, tmp_path):
  run_dir, out, _ = digits
  again = str(tmp_path / "again")
  write.write_report(run_dir, again, CONFIG)
  for name in ["report.json", "report.html"] + [
    os.path.join("tables", f) for f in os.listdir(os.path.join(out, "tables"))
  ]:
    with open(os.path.join(out, name), "rb") as a, open(os.path.join(again, name), "rb") as b:
      assert a.read() == b.read(), name


def test_nan_is_null_in_json(biased):
  _, out, doc = biased
  text = open(os.path.join(out, "report.json")).read()
  assert "NaN" not in text and "Infinity" not in text
  rows = [
    r for r in doc["tables"]["pie_accuracy"] if r["variant"] == "full_int8" and r["subset"] == "pie"
  ]
  assert rows and all(r["top1"] is None for r in rows)  # no PIE: accuracy undefined


def test_missing_predictions_leave_no_output(tmp_path):
  out = tmp_path / "out"
  with pytest.raises(collect.CollectError) as e:
    write.write_report(str(tmp_path / "no_run"), str(out), CONFIG)
  assert "\n" not in str(e.value)
  assert not out.exists()


def test_misaligned_ids_leave_no_output(digits, tmp_path):
  run_dir = str(tmp_path / "run")
  shutil.copytree(digits[0], run_dir)
  test = np.load(os.path.join(run_dir, "predictions", "dense", "0", "test.npz"))
  fake_run.write_member(
    run_dir,
    "full_int8",
    3,
    "test",
    test["ids"][::-1].copy() + 1,
    test["labels"],
    test["topk"][:, 0],
    10,
    "digits",
  )
  out = tmp_path / "out"
  out.mkdir()
  with pytest.raises(collect.CollectError, match="ids differ") as e:
    write.write_report(run_dir, str(out), CONFIG)
  assert "\n" not in str(e.value)
  assert fake_run.listing(str(out)) == []


def test_unwritable_output_is_a_one_line_error(digits, tmp_path):
  not_a_dir = tmp_path / "file"
  not_a_dir.write_text("x")
  with pytest.raises(write.ReportError, match="not a directory"):
    write.write_report(digits[0], str(not_a_dir), CONFIG)
  assert not_a_dir.read_text() == "x"


def test_a_failed_write_removes_what_it_wrote(digits, tmp_path, monkeypatch):
  out = str(tmp_path / "out")
  real = write.fileio.write_json

  def fail(path, obj):
    raise OSError("disk full")

  monkeypatch.setattr(write.fileio, "write_json", fail)
  with pytest.raises(write.ReportError, match="disk full"):
    write.write_report(digits[0], out, CONFIG)
  assert fake_run.listing(out) == []
  monkeypatch.setattr(write.fileio, "write_json", real)


# --- a failed re-run keeps the previous report byte for byte ---------------------------------


def _snapshot(out):
  """{relative path: bytes} of every file under `out`, and its sorted top-level entries."""
  files = {}
  for rel in fake_run.listing(out):
    with open(os.path.join(out, rel), "rb") as f:
      files[rel] = f.read()
  return files, sorted(os.listdir(out))


@pytest.fixture
def previous(digits, tmp_path):
  """An output directory holding a previous report that differs from digits' in every file."""
  out = str(tmp_path / "out")
  shutil.copytree(digits[1], out)
  for rel in fake_run.listing(out):
    with open(os.path.join(out, rel), "ab") as f:
      f.write(b"\nprevious run\n")
  with open(os.path.join(out, "tables", "previous_only.csv"), "w") as f:
    f.write("a\n1\n")
  return out


def _disk_full_at(monkeypatch, n):
  """The n-th file write (0-based) fails with ENOSPC."""
  real, calls = write.fileio._write_file, []

  def write_file(path, data):
    calls.append(path)
    if len(calls) == n + 1:
      raise OSError(errno.ENOSPC, "No space left on device")
    real(path, data)

  monkeypatch.setattr(write.fileio, "_write_file", write_file)


def _swap_rename_fails_at(monkeypatch, n):
  """The swap's n-th rename (0-based) fails with EIO (the roll-back's renames succeed)."""
  real, calls = write.fileio._rename, []

  def rename(src, dst):
    if not os.path.basename(src).startswith(os.path.basename(dst) + ".tmp-"):  # atomic writes
      calls.append(dst)
      if len(calls) == n + 1:
        raise OSError(errno.EIO, "Input/output error")
    real(src, dst)

  monkeypatch.setattr(write.fileio, "_rename", rename)


def _directory_at(name):
  def make(monkeypatch, out):
    del monkeypatch
    os.remove(os.path.join(out, name))
    os.mkdir(os.path.join(out, name))

  return make


# The digits report has 11 tables: 13 file writes; the swap renames 3 old entries aside and 3 new
# ones in.
FAULTS = {
  "report.html is a directory": (_directory_at("report.html"), "report.html: Is a directory"),
  "report.json is a directory": (_directory_at("report.json"), "report.json: Is a directory"),
  **{
    f"disk full at write {n}": (lambda m, out, n=n: _disk_full_at(m, n), "No space left on device")
    for n in (5, 12)
  },
  **{
    f"rename {n} of the swap fails": (
      lambda m, out, n=n: _swap_rename_fails_at(m, n),
      "Input/output error",
    )
    for n in range(6)
  },
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_failed_rewrite_keeps_the_previous_report(digits, previous, monkeypatch, fault):
  make_fault, message = FAULTS[fault]
  make_fault(monkeypatch, previous)
  before = _snapshot(previous)
  with pytest.raises(write.ReportError, match=re.escape(message)) as e:
    write.write_report(digits[0], previous, CONFIG)
  assert "\n" not in str(e.value)
  assert str(e.value).startswith(f"cannot write the report under {previous}: ")
  assert _snapshot(previous) == before  # byte for byte, and no staging directory left


def test_a_rewrite_replaces_the_previous_report_whole(digits, previous):
  write.write_report(digits[0], previous, CONFIG)
  assert _snapshot(previous) == _snapshot(digits[1])  # previous_only.csv is gone


def test_leftovers_of_a_killed_save_are_finished_or_undone(digits, previous):
  before = _snapshot(previous)
  # Killed after the new tables moved in, before report.html: the old tables are aside.
  aside = os.path.join(previous, ".report.old-1-dead")
  staged = os.path.join(previous, ".report.tmp-1-dead")
  shutil.copytree(os.path.join(digits[1], "tables"), os.path.join(staged, "tables"))
  os.makedirs(aside)
  os.rename(os.path.join(previous, "tables"), os.path.join(aside, "tables"))
  os.rename(os.path.join(staged, "tables"), os.path.join(previous, "tables"))
  for name in ("report.html", "report.json"):
    shutil.copy(os.path.join(digits[1], name), os.path.join(staged, name))
  shutil.copytree(staged, os.path.join(previous, ".report.tmp-2-build"))  # a killed build
  assert swap.clean_staging(previous, layout.REPORT_STAGING, layout.REPORT_ENTRIES) == []
  assert _snapshot(previous) == before  # the previous report, whole
  os.mkdir(os.path.join(previous, ".report.tmp-3-build"))
  write.write_report(digits[0], previous, CONFIG)  # a save cleans leftovers first
  assert _snapshot(previous) == _snapshot(digits[1])
