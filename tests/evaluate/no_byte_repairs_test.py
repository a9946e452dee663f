"""Repairs that cost no bytes: `full_int8~cle` and `full_int8~int16x8` of a member.

On the planted range fault (`tests/planted.py`: the first Conv2D's output channel x100, the next
depthwise channel /100: the float function unchanged), trained here on the embedded digits and
written as a member (`tests.export.fake_run.write_member`): the plain full-int8 file breaks
test examples the float model gets right; both repaired files, made by the audit's own function from
the member on disk, break fewer, at <= 1.05x (cle) and <= 1.25x (int16x8: int16 input, output and
biases) the plain file's bytes, and record what they are.
"""

import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np
import pytest

from tests import planted
from tests.export import fake_run
from tf_forget.artifacts import names
from tf_forget.compat import keras2
from tf_forget.data import registry
from tf_forget.evaluate import batched
from tf_forget.evaluate import no_byte_repairs
from tf_forget.evaluate import repairs
from tf_forget.export import converter
from tf_forget.export import export_state


def _planted(dataset):
  keras = keras2.keras()
  train = dataset.load("train")
  model = planted.train(keras, planted.cnn(keras, separable=1), train.images, train.labels)
  return planted.plant(model, "range")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("run"))
  dataset = registry.get("digits")
  model = _planted(dataset)
  fake_run.write_member(run_dir, "dense", 0, model, dataset="digits")
  test = dataset.load("test")
  reference = model.predict(test.images.astype(np.float32), verbose=0).argmax(axis=1)
  rep = export_state.representative_images(dataset).images
  plain = converter.convert(model, "full_int8", rep)
  return run_dir, dataset, test, reference, plain


def _broken(data, test, reference):
  top1 = batched.BatchedRunner(data, runtime="builtin").run(test.images).argmax(axis=1)
  return int(np.sum((reference == test.labels) & (top1 != test.labels)))


@pytest.mark.parametrize("kind,max_size", [("cle", 1.05), ("int16x8", 1.25)])
def test_the_repair_breaks_fewer_examples_at_about_the_same_size(run, kind, max_size):
  run_dir, dataset, test, reference, plain = run
  variant = names.Variant("dense", names.repair_format(kind))
  meta = repairs.repair(run_dir, variant, 0, dataset)
  path, _ = export_state.export_paths(run_dir, variant, 0)
  with open(path, "rb") as f:
    data = f.read()
  before, after = _broken(plain, test, reference), _broken(data, test, reference)
  assert before >= 10, before  # the planted fault makes the plain file forget
  assert after <= before // 4, (kind, before, after)
  assert len(data) <= max_size * len(plain), (kind, len(data), len(plain))
  assert meta["repair"]["kind"] == kind and meta["format"] == variant.format
  assert repairs.repair_status(run_dir, variant, 0, dataset)  # current
  if kind == "cle":
    assert meta["repair"]["equalization"]["pairs"][0]["max_scale"] > 10


def test_a_format_that_is_no_such_repair_is_refused(run):
  run_dir, dataset, *_ = run
  with pytest.raises(no_byte_repairs.RepairError, match="not a repair that costs no bytes"):
    no_byte_repairs.make(run_dir, names.Variant("dense", "full_int8~float2"), 0, dataset, {})
  with pytest.raises(names.FormatError, match="unknown repair"):
    names.repair_format("float")
