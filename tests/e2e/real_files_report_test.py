"""Real files as users have them, through the audit command: the report answers "is my file OK,
and why (not) mine".

The user's directory is `user_files.make`'s (a tiny model, its int8 file calibrated on the
first 100 train images, 200 test PNGs) plus:

* `calib/`: those same 100 train images, so that tf_forget's `--compress=full_int8
  --calibration=folder:calib` is calibrated as the user's int8 file was (the two predict
  alike);
* `worse.tflite`: the model converted to full int8 on those images at half their brightness
  (activation ranges too small: it flips test examples the good file keeps);
* `dyn.tflite`: the model converted by the plain converter with dynamic-range quantization,
  as tf_forget's `dynamic_int8` is (the same predictions; the tutorial's case);
* `black/`: black images, a calibration after which every input quantizes to the same value,
  so the full int8 file forgets most of the test set and keeping layers in float cannot win
  anything back (a planted "no gain" repair).

Expected numbers are counted here from the stored predictions (`predictions/**/test.npz`) and
the image folder, not from the report.
"""

import json
import os
import re
import shutil
import types

import numpy as np
import pytest
import tensorflow as tf

from tests.e2e import audit_binary
from tests.e2e import user_files
from tf_forget.compat import keras2
from tf_forget.data import dataset_api
from tf_forget.data import registry
from tf_forget.report.words import quantities


@pytest.fixture(scope="module")
def root(tmp_path_factory):
  path = user_files.make(tmp_path_factory.mktemp("user"))
  train = registry.get("digits").load("train").take(np.arange(100))
  user_files.write_pngs(path / "calib", train)
  black = train.take(np.arange(10))
  user_files.write_pngs(
    path / "black",
    dataset_api.Examples(images=np.zeros_like(black.images), labels=black.labels, ids=black.ids),
  )
  model = keras2.keras().models.load_model(str(path / "model.keras"))
  dim = types.SimpleNamespace(images=(train.images * 0.5).astype(np.float32))
  (path / "worse.tflite").write_bytes(user_files.convert(model, dim, int8=True))
  converter = tf.lite.TFLiteConverter.from_keras_model(model)
  converter.optimizations = [tf.lite.Optimize.DEFAULT]
  (path / "dyn.tflite").write_bytes(converter.convert())
  return path


ARGS = (
  "--dataset=folder:images",
  "--reference=model.keras",
  "--candidate=int8=int8.tflite",
  *user_files.COMMON,
)
SAME = (
  "--compress=full_int8",
  "--candidate=worse=worse.tflite",
  "--calibration=folder:calib",
  "--repair=float1",
)


def _audit(root, out, *extra):
  result = audit_binary.in_process([*ARGS, f"--out={out}", *extra], root)
  assert result.returncode in (0, 3), result.stderr[-3000:]
  with open(root / out / "report.json") as f:
    return result, json.load(f)


@pytest.fixture(scope="module")
def same(root):
  """The user's int8 and worse files beside tf_forget's full_int8, calibrated alike."""
  return _audit(root, "same", *SAME)


def _top1(root, out, variant):
  with np.load(root / out / "predictions" / variant / "0" / "test.npz") as d:
    return d["ids"], d["topk"][:, 0]


def _listing(folder):
  """The folder's images relative to it, sorted ('/'-separated), read with os.walk."""
  return sorted(
    os.path.relpath(os.path.join(d, f), folder).replace(os.sep, "/")
    for d, _, files in os.walk(folder)
    for f in files
    if f.endswith(".png")
  )


def _size(root, out, variant):
  return (root / out / "tflite" / "dense" / "0" / f"{variant}.tflite").stat().st_size


def test_an_identical_user_file_is_recommended_over_tf_forgets(root, same):
  result, doc = same
  _, int8 = _top1(root, "same", "user_int8")
  _, full = _top1(root, "same", "full_int8")
  assert np.array_equal(int8, full)  # the premise: the same calibration, the same predictions
  rec = doc["recommendation"]
  assert rec["variant"] == "user_int8", rec
  mine = next(s for s in rec["users"] if s.startswith("Your int8 file"))
  if _size(root, "same", "user_int8") > _size(root, "same", "full_int8"):  # as good: preferred
    assert rec["instead_of"] == "full_int8"
    assert "recommended instead of tf_forget's full_int8" in mine
    assert "the same top-1 predictions on all 200 test examples" in mine
  else:  # smaller: the rule's own choice, compared with tf_forget's file all the same
    assert "instead_of" not in rec and "is recommended: the rule's choice" in mine
    kib = _size(root, "same", "full_int8") / 1024
    assert f"against tf_forget's full_int8 ({kib:.1f} KiB, gzip " in mine
    assert ("): the same top-1 predictions on all 200 test examples") in mine
  assert "Your own files (--candidate) ship instead when as good" in rec["rule"]
  assert [r["variant"] for r in doc["tables"]["verdict"]][:2] == ["user_int8", "user_worse"]
  assert "recommended: deploy/user_int8/0.tflite" in result.stdout
  assert "  Your int8 file (user_int8" in result.stdout
  page = (root / "same" / "report.html").read_text()
  verdict = page[page.index('<section id="verdict">') : page.index('<section id="glossary">')]
  assert verdict.count('class="user-file"') == 2


def test_a_worse_user_file_says_how_many_more_flips(root, same):
  _, doc = same
  _, dense = _top1(root, "same", "dense")
  _, int8 = _top1(root, "same", "user_int8")
  _, worse = _top1(root, "same", "user_worse")
  more = int(np.sum(worse != dense)) - int(np.sum(int8 != dense))
  assert more > 0, "worse.tflite should flip more than the well-calibrated file"
  line = next(s for s in doc["recommendation"]["users"] if s.startswith("Your worse file"))
  assert (
    f"it flips {more} more test examples than your int8 file "
    f"({int(np.sum(worse != dense))} vs {int(np.sum(int8 != dense))} against the "
    "reference; "
  ) in line
  assert f"{int(np.sum(worse != int8))} of 200 test examples apart" in line


def test_flips_and_layer_subsets_name_the_images(root, same):
  files = _listing(root / "images")
  ids, dense = _top1(root, "same", "dense")
  _, worse = _top1(root, "same", "user_worse")
  lines = (root / "same" / "tables" / "flips.csv").read_text().splitlines()
  assert lines[0].startswith("variant,id,path,label,")
  rows = [ln.split(",") for ln in lines[1:] if ln.startswith("user_worse,")]
  assert [int(r[1]) for r in rows] == [int(i) for i in ids[worse != dense]]
  for r in rows:
    assert r[2] == files[int(r[1])] and (root / "images" / r[2]).is_file()
    assert r[2].split("/")[0] == r[3]  # the image's class folder is its label
  with open(root / "same" / "layers" / "dense" / "0" / "user_worse.json") as f:
    forgotten = json.load(f)["subsets"]["forgotten"]
  assert forgotten["paths"] == [files[i] for i in forgotten["ids"]] and forgotten["paths"]


def test_no_repair_where_the_int8_file_forgot_nothing(root, same):
  result, doc = same
  with open(root / "same" / "layers" / "dense" / "0" / "full_int8.json") as f:
    flips = json.load(f)["flips"]
  # The rule by hand: more than 3 broken and an exact McNemar p <= 0.05 call for a repair.
  m = flips["broken"] + flips["fixed"]
  from scipy import stats

  p = 1.0 if m == 0 else min(1.0, 2 * stats.binom.cdf(min(flips["broken"], flips["fixed"]), m, 0.5))
  assert not (flips["broken"] > 3 and p <= 0.05)
  assert "no repair of dense/0 full_int8: it forgot nothing significant" in result.stdout
  assert not (root / "same" / "tflite" / "dense" / "0" / "full_int8~float1.tflite").exists()
  assert "full_int8~float1" not in doc["variants"]
  assert any(
    r.startswith("No repair of full_int8: it forgot nothing significant")
    for r in doc["recommendation"]["repairs"]
  )


def test_k1_report_in_words(root, same):
  page = (root / "same" / "report.html").read_text()
  assert "<title>tf_forget audit: model.keras on images/</title>" in page
  meta = re.search(r'<p class="meta">(.*?)</p>', page).group(1)
  assert "<b>calibration</b>: folder calib/" in meta and "<b>your model</b>: model.keras" in meta
  assert "{" not in meta and "&#x27;" not in meta and "content" not in meta
  ids = re.findall(r'<section id="([^"]+)"', page)
  assert "class-level" not in ids and "overview" not in ids and "left-out" in ids
  assert "Not shown" not in page and " (0)</b>" not in page


def test_flip_rates_with_the_digits_their_gate_needs(root, same):
  _, dense = _top1(root, "same", "dense")
  _, worse = _top1(root, "same", "user_worse")
  rate = float(np.mean(worse != dense))
  bound = rate - 0.0001  # the same to one decimal: only a second one tells them apart
  result, doc = _audit(root, "same", *SAME, f"--max_flip_rate={bound}")
  assert result.returncode == 3
  cell = next(ln for ln in result.stdout.splitlines() if ln.startswith("user_worse")).split()
  shown = quantities.rate(rate, bound=bound)
  assert shown in cell and shown != quantities.rate(bound, bound=rate)
  assert f"{100 * rate:.1f}" == f"{100 * bound:.1f}"  # what one decimal would have printed
  assert f"gate failed: user_worse: top-1 flip rate {shown[:-1]}" in result.stdout
  line = next(s for s in doc["recommendation"]["users"] if s.startswith("Your worse file"))
  assert "is not eligible (fail: top-1 flip rate" in line


@pytest.fixture(scope="module")
def black(root):
  """Calibrated on black images (a full int8 file that forgets, a repair without gain), with
  tf_forget's dynamic_int8 and the user's dyn.tflite."""
  return _audit(
    root,
    "black_run",
    "--calibration=folder:black",
    "--repair=float1",
    "--compress=full_int8,dynamic_int8",
    "--candidate=dyn=dyn.tflite",
  )


def test_the_users_file_ships_when_as_good_and_within_ten_percent(root, black):
  _, doc = black
  _, dyn = _top1(root, "black_run", "user_dyn")
  _, tf_dyn = _top1(root, "black_run", "dynamic_int8")
  mine, theirs = _size(root, "black_run", "user_dyn"), _size(root, "black_run", "dynamic_int8")
  assert np.array_equal(dyn, tf_dyn) and mine <= 1.1 * theirs  # the premise
  rec = doc["recommendation"]
  assert rec["variant"] == "user_dyn" and rec["file"] == "deploy/user_dyn/0.tflite"
  line = next(s for s in rec["users"] if s.startswith("Your dyn file"))
  if mine > theirs:
    assert rec["instead_of"] == "dynamic_int8"
    assert (
      f"recommended instead of tf_forget's dynamic_int8 ({theirs / 1024:.1f} KiB, gzip " in line
    )
    assert "): the same top-1 predictions on all 200 test examples" in line
    assert "you ship your own bytes" in line


def test_a_repair_without_gain_is_marked_and_never_recommended(root, black):
  result, doc = black
  assert (root / "black_run" / "tflite" / "dense" / "0" / "full_int8~float1.tflite").exists()
  (repair,) = doc["tables"]["repair"]
  assert repair["broken_int8"] > 3 and repair["gain"] is False
  assert repair["broken_repaired"] >= repair["broken_int8"]
  row = next(r for r in doc["tables"]["verdict"] if r["variant"] == "full_int8~float1")
  assert row["verdict"] == "no gain" and row["reason"].startswith("no gain")
  assert doc["recommendation"]["variant"] != "full_int8~float1"
  assert any("— no gain" in r for r in doc["recommendation"]["repairs"])
  assert "full_int8~float1" in result.stdout


def test_plan_prints_the_cost_without_reading_an_image(root):
  shutil.copytree(root / "images", root / "plan_images")
  first = root / "plan_images" / _listing(root / "plan_images")[0]
  first.write_bytes(b"not a png")  # decoding it would fail
  args = [
    "--dataset=folder:plan_images",
    *ARGS[1:],
    "--compress=full_int8",
    "--calibration=folder:calib",
    "--out=planned",
  ]
  result = audit_binary.in_process([*args, "--plan"], root)
  assert result.returncode == 0, result.stderr[-3000:]
  out = result.stdout
  assert "audit plan: your model (keras, 1 reference, 8x8x1 -> 10 classes)" in out
  # float32 and full_int8 made here, the user's int8 file: 3 files over the 200 images.
  assert "cost: 3 files x 200 test images = 600 inferences" in out, out
  assert re.search(r"full_int8 +\S+ k MACs per image", out)
  assert re.search(r"estimate: about [0-9.]+ (s|min)", out) and "no image was read" in out
  assert not (root / "planned").exists() and first.read_bytes() == b"not a png"
  # The audit itself reads every image's header: it refuses the file in one line.
  line = audit_binary.one_line(audit_binary.in_process(args, root))
  assert first.name in line and "plan_images" in line
