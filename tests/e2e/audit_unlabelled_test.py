"""An audit without labels: the user's model on a folder of images with no class folders.

The test plays the user: a tiny tf_keras classifier trained on scikit-learn's digits
(`user_files.train`), its full int8 file (`user_files.convert`), and a planted float file that
swaps classes 3 and 8 on four images the model is sure of (a trigger on each image's pixel sum, in
the graph), with digits' 500 test images as PNGs at the root of `images/` (no labels) and the same
PNGs in class folders (`labelled/<class>/`). The audits run through the command's `main` in this
process (`audit_binary.in_process`).

Independent computation: the interpreter run here (`tf.lite.Interpreter`) on the PNGs gives the
reference's and each file's top-1; numpy counts the flips and the per-class flips, and the
Stuart–Maxwell statistic is the textbook dᵀ V⁻¹ d (Stuart 1955; Agresti, Categorical Data
Analysis, §11.3) over the classes with a flip.
"""

import json
import os

import numpy as np
import pandas as pd
import pytest
from scipy import special
from scipy import stats
import tensorflow as tf

from tests.e2e import audit_binary
from tests.e2e import user_files
from tf_forget.artifacts import layout
from tf_forget.data import registry

COMMON = ["--executor=inline", "--deploy_encoding=plain", "--reference=model.keras"]
SWAP = (3, 8)  # the planted file swaps these two classes ...
PLANTED = 2  # ... on this many confident images of each


def _top1(path, images, float_input=True):
  """Top-1 and logits of a `.tflite` file over uint8 images `[N, 8, 8, 1]` (one at a time)."""
  interp = tf.lite.Interpreter(model_path=str(path))
  interp.allocate_tensors()
  inp, out = interp.get_input_details()[0], interp.get_output_details()[0]
  scores = []
  for image in images:
    x = image[None].astype(np.float32)
    if not float_input:
      scale, zero = inp["quantization"]
      x = np.clip(np.round(x / scale + zero), -128, 127).astype(np.int8)
    interp.set_tensor(inp["index"], x)
    interp.invoke()
    y = interp.get_tensor(out["index"])[0].astype(np.float32)
    if out["dtype"] == np.int8:
      scale, zero = out["quantization"]
      y = (y - zero) * scale
    scores.append(y)
  scores = np.stack(scores)
  return scores.argmax(axis=1), scores


def _planted(model, images, ref_top1, ref_conf):
  """The float32 file of `model` with classes 3 and 8 swapped on `PLANTED` confident images of
  each (chosen by a pixel sum no other image has), and the positions it flips."""
  sums = images.reshape(len(images), -1).astype(np.int64).sum(axis=1)
  unique = np.bincount(sums)[sums] == 1
  chosen = []
  for c in SWAP:
    hit = np.flatnonzero((ref_top1 == c) & (ref_conf >= 0.95) & unique)
    chosen += hit[:PLANTED].tolist()
  triggers = tf.constant(sums[chosen].astype(np.float32))
  perm = np.arange(10)
  perm[list(SWAP)] = SWAP[::-1]

  @tf.function(input_signature=[tf.TensorSpec([None, 8, 8, 1], tf.float32)])
  def swapped(x):
    logits = model(x)
    total = tf.reduce_sum(x, axis=[1, 2, 3])
    hit = tf.reduce_any(tf.equal(total[:, None], triggers[None, :]), axis=1)
    return tf.where(hit[:, None], tf.gather(logits, perm, axis=1), logits)

  converter = tf.lite.TFLiteConverter.from_concrete_functions(
    [swapped.get_concrete_function()], model
  )
  return converter.convert(), sorted(chosen)


@pytest.fixture(scope="module")
def user(tmp_path_factory):
  """images/<i>.png (no labels), labelled/<class>/<i>.png, model.keras, int8.tflite,
  planted.tflite, float.tflite, and what the interpreter says of them here."""
  root = tmp_path_factory.mktemp("user")
  data = registry.get("digits")
  train, test = data.load("train"), data.load("test")
  (root / "images").mkdir()
  for i, image in enumerate(test.images):
    tf.io.write_file(str(root / "images" / f"{i:04d}.png"), tf.io.encode_png(image))
  user_files.write_pngs(root / "labelled", test)
  model = user_files.train(0, train, epochs=40)
  model.save(str(root / "model.keras"))
  (root / "float.tflite").write_bytes(user_files.convert(model, train, int8=False))
  (root / "int8.tflite").write_bytes(user_files.convert(model, train, int8=True))
  a, logits = _top1(root / "float.tflite", test.images)
  conf = special.softmax(logits, axis=1).max(axis=1)
  planted, chosen = _planted(model, test.images, a, conf)
  (root / "planted.tflite").write_bytes(planted)
  files = {
    "user_int8": _top1(root / "int8.tflite", test.images, float_input=False)[0],
    "user_planted": _top1(root / "planted.tflite", test.images)[0],
  }
  return root, a, files, chosen, test.labels


def _run(root, *args):
  result = audit_binary.in_process([*COMMON, *args], root)
  return result


@pytest.fixture(scope="module")
def unlabelled(user):
  """The audit of images/ (no labels), with the gates without labels."""
  root = user[0]
  result = _run(
    root,
    "--dataset=folder:images",
    "--candidate=int8=int8.tflite",
    "--candidate=planted=planted.tflite",
    "--compress=full_int8",
    "--max_flip_rate=0.01",
    "--max_class_flip_rate=0.03",
    "--max_confident_flip_rate=0.005",
    "--out=run",
  )
  return result, json.loads((root / "run" / "report.json").read_text())


def _stuart_maxwell(table):
  """dᵀ V⁻¹ d over the classes with a flip (one group here), by hand."""
  off = table + table.T
  np.fill_diagonal(off, 0)
  keep = np.flatnonzero(off.any(axis=1))
  t = table[np.ix_(keep, keep)].astype(float)
  d = (t.sum(axis=1) - t.sum(axis=0))[:-1]
  v = -(t + t.T)
  np.fill_diagonal(v, t.sum(axis=1) + t.sum(axis=0) - 2 * np.diag(t))
  v = v[:-1, :-1]
  return float(d @ np.linalg.solve(v, d)), keep.size - 1


def test_flips_classes_and_marginal_homogeneity_equal_the_interpreters(user, unlabelled):
  root, a, files, _, _ = user
  result, report = unlabelled
  assert result.returncode == 3, result.stdout[-3000:] + result.stderr
  assert report["dataset"]["options"]["labels"] == "none"
  calibration = report["dataset"]["options"]["calibration"]  # full_int8: the same images
  assert calibration["name"] == "folder" and calibration["options"]["labels"] == "none"
  assert calibration["options"]["path"] == str(root / "images")
  assert report["variants"]["full_int8"]["n"] == a.size
  assert "without labels" in result.stdout
  tables = report["tables"]
  rows = {r["variant"]: r for r in tables["unlabelled_files"]}
  for variant, b in files.items():
    flips = np.flatnonzero(a != b)
    assert rows[variant]["flips"] == flips.size
    assert rows[variant]["n"] == a.size
    got = sorted(r["position"] for r in tables["unlabelled_flips"] if r["variant"] == variant)
    assert got == flips.tolist()
    table = np.zeros((10, 10), np.int64)
    np.add.at(table, (a, b), 1)
    classes = [r for r in tables["unlabelled_classes"] if r["variant"] == variant]
    assert [r["left"] for r in classes] == (table.sum(axis=1) - np.diag(table)).tolist()
    assert [r["entered"] for r in classes] == (table.sum(axis=0) - np.diag(table)).tolist()
    assert [r["n"] for r in classes] == np.bincount(a, minlength=10).tolist()
    if flips.size:
      statistic, df = _stuart_maxwell(table)
      assert rows[variant]["stuart_maxwell_p"] == pytest.approx(stats.chi2.sf(statistic, df))


def test_a_planted_swap_is_caught_by_the_class_and_confident_gates_under_one_percent(
  user, unlabelled
):
  _, a, files, chosen, _ = user
  result, report = unlabelled
  assert np.flatnonzero(a != files["user_planted"]).tolist() == chosen
  s = report["variants"]["user_planted"]
  assert s["flip_rate"] < 0.01
  assert s["decides_like"] is False
  reasons = " ".join(s["gate_reasons"])
  assert "max_flip_rate" not in reasons and "flip rate 0.80%" not in reasons
  assert "class 3: flip rate" in reasons or "class 8: flip rate" in reasons
  assert "confident flips 0.80%" in reasons
  manifest = json.loads((user[0] / "run" / "deploy" / "manifest.json").read_text())
  failed = manifest["failed_variants"]
  assert "user_planted" in failed
  assert "gate failed: user_planted: class" in result.stdout
  # The share test does not see an even swap; the report says where the decisions went.
  assert s["classes_shifted"] == 0
  assert any(m.startswith(("3:", "8:")) for m in s["moved_classes"])
  page = (user[0] / "run" / "report.html").read_text()
  assert "Verdict without labels" in page and "flipped image" in page


def test_labelled_and_unlabelled_runs_give_the_same_flips(user, unlabelled):
  root, *_ = user
  result = _run(
    root, "--dataset=folder:labelled", "--candidate=planted=planted.tflite", "--out=labelled_run"
  )
  assert result.returncode == 0, result.stderr
  labelled = pd.read_csv(root / "labelled_run" / "tables" / "flips.csv")
  labelled = labelled[labelled["variant"] == "user_planted"]
  got = {
    p.split("/")[-1]: (r, c)
    for p, r, c in zip(
      labelled["path"], labelled["reference_prediction"], labelled["candidate_prediction"]
    )
  }
  _, report = unlabelled
  paths = sorted(p.name for p in (root / "images").glob("*.png"))
  mine = {
    paths[r["position"]]: (r["reference_prediction"], r["candidate_prediction"])
    for r in report["tables"]["unlabelled_flips"]
    if r["variant"] == "user_planted"
  }
  assert got == mine and mine


@pytest.mark.parametrize(
  "layout, extra, message",
  [
    ("mixed", [], "is in no class folder: the folder mixes images"),
    ("empty", ["--labels=none"], "holds no image"),
    ("images", ["--max_accuracy_drop=0.01"], "--max_accuracy_drop needs labels"),
  ],
)
def test_bad_input_is_one_line_before_anything_is_written(user, layout, extra, message):
  root = user[0]
  if layout == "mixed":
    (root / "mixed" / "3").mkdir(parents=True, exist_ok=True)
    (root / "mixed" / "3" / "a.png").write_bytes((root / "images" / "0000.png").read_bytes())
    (root / "mixed" / "b.png").write_bytes((root / "images" / "0001.png").read_bytes())
  elif layout == "empty":
    (root / "empty").mkdir(exist_ok=True)
  result = _run(
    root,
    f"--dataset=folder:{layout}",
    "--candidate=int8=int8.tflite",
    f"--out=bad_{layout}",
    *extra,
  )
  assert result.returncode == 1
  assert message in result.stderr and result.stderr.count("\n") == 1
  assert not (root / f"bad_{layout}").exists()


def test_tf_forget_report_renders_the_same_report_again(user, unlabelled):
  """`tf-forget report RUN_DIR` of the run without labels: the same report.json, page and tables
  (every artifact current: nothing is redone), and the same exit status (a gate failed), from
  the finished run's record and rendered again without it."""
  from tf_forget.commands import audit_command

  run = user[0] / "run"
  before = {p.relative_to(run): p.read_bytes() for p in _report_files(run)}
  # With the finished run's record (nothing changed: the recorded end), then without it (the
  # report rendered again from the run's artifacts).
  for record in (True, False):
    if not record:
      os.remove(layout.finished_file(str(run)))
    with pytest.raises(SystemExit) as failed:
      audit_command.render(str(run), name="report")
    assert failed.value.code == 3
    after = {p.relative_to(run): p.read_bytes() for p in _report_files(run)}
    assert sorted(after) == sorted(before)
    changed = [str(p) for p in before if after[p] != before[p]]
    assert changed == [], (record, changed)


def _report_files(run):
  return [run / "report.json", run / "report.html", *sorted((run / "tables").glob("*.csv"))]
