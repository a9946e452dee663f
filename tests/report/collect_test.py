"""collect: predictions aligned on ids, attributes from the registry, one-line errors."""

import dataclasses
import json
import os
import shutil

import numpy as np
import pytest

from tests.report import fake_run
from tf_forget.report import collect


@pytest.fixture(scope="module")
def digits_run(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("digits"))
  ids, labels, lost, gained = fake_run.make_digits_run(run_dir, members=3)
  return run_dir, ids, labels


def test_loads_every_variant_and_split(digits_run):
  run_dir, ids, labels = digits_run
  run = collect.load_run(run_dir)
  assert run.dataset_name == "digits" and run.num_classes == 10
  assert run.variants == ["dense", "full_int8", "prune_0.9"]
  pop = run.eval["prune_0.9"]
  assert pop.topk.shape == (3, 500, 5)
  np.testing.assert_array_equal(pop.members, [0, 1, 2])
  np.testing.assert_array_equal(pop.ids, ids)
  np.testing.assert_array_equal(pop.labels, labels)
  # Member 1's top-1 is the fixture's noise pattern (i % 50 == 1 wrong).
  np.testing.assert_array_equal(
    run.eval["dense"].top1[1] != labels,
    (np.arange(500) % 50 == 1) | np.isin(np.arange(500), fake_run.planted_digits(labels)[1]),
  )
  assert [s[1:] for s in run.corrupted_splits()] == [("gaussian_noise", s) for s in range(1, 6)]
  assert run.attributes == {} and run.train_attribute_shares == {}


def test_pairing_by_index_outside_one_shot(digits_run):
  run_dir, _, _ = digits_run
  run = collect.load_run(run_dir)
  assert run.pairing["full_int8"] == {
    "kind": "index",
    "label": "index (same network)",
    "pairs": [(0, 0), (1, 1), (2, 2)],
    "notes": [],
    "pruning": {},
  }
  assert run.pairing["prune_0.9"]["label"] == "index (independent members)"
  # A Run built without `pairing` falls back to index pairing.
  bare = dataclasses.replace(run, pairing={})
  assert bare.pairing_of("prune_0.9") == run.pairing["prune_0.9"]


def test_parent_link_checks(tmp_path):
  run_dir = str(tmp_path)
  fake_run.make_oneshot_run(
    run_dir, members=3, variants={"oneshot_gp_r4": 1.0, "oneshot_rp_r4": 1.0}
  )
  meta = tmp_path / "members" / "oneshot_gp_r4"
  (meta / "0" / "metadata.json").write_text(json.dumps({"model_sha256": "x"}))
  (meta / "1" / "metadata.json").write_text("{not json")
  link = json.loads((tmp_path / "members" / "oneshot_rp_r4" / "2" / "metadata.json").read_text())
  link["parent"]["variant"] = "prune_0.9"
  (tmp_path / "members" / "oneshot_rp_r4" / "2" / "metadata.json").write_text(json.dumps(link))
  (tmp_path / "members" / "dense" / "1" / "metadata.json").write_text("{}")
  run = collect.load_run(run_dir)
  gp, rp = run.pairing["oneshot_gp_r4"], run.pairing["oneshot_rp_r4"]
  assert gp["pairs"] == [(2, 2)] and rp["pairs"] == [(0, 0)]
  notes = gp["notes"] + rp["notes"]
  assert len(notes) == 4 and all("\n" not in n for n in notes)
  for text in (
    "oneshot_gp_r4: member 0 left out of paired measures: metadata.json has no parent link",
    "oneshot_gp_r4: member 1 left out of paired measures: no readable",
    "oneshot_rp_r4: member 1 left out of paired measures: the parent's metadata.json "
    "records no model_sha256 (dense/1)",
    "oneshot_rp_r4: member 2 left out of paired measures: parent link names 'prune_0.9'",
  ):
    assert any(n.startswith(text) for n in notes), text
  assert rp["pruning"]["algorithm"] == "rp"


def test_rows_in_another_order_are_aligned_to_dense(tmp_path):
  run_dir = str(tmp_path)
  test_ids = np.arange(20, dtype=np.int64) * 3
  labels = np.arange(20) % 10
  fake_run.write_member(run_dir, "dense", 0, "test", test_ids, labels, labels, 10, "digits")
  perm = np.random.default_rng(0).permutation(20)
  pred = labels.copy()
  pred[0] = 9  # the row of id 0 is wrong
  fake_run.write_member(
    run_dir, "full_int8", 0, "test", test_ids, labels, pred, 10, "digits", shuffle=perm
  )
  run = collect.load_run(run_dir, dataset=_FakeDataset())
  pop = run.eval["full_int8"]
  np.testing.assert_array_equal(pop.ids, test_ids)
  assert pop.top1[0, 0] == 9 and (pop.top1[0, 1:] == labels[1:]).all()


class _FakeDataset:
  """A registry-like data set without attributes (ids 0, 3, ..., 57 in `test`)."""

  class spec:
    name = "digits"
    num_classes = 10
    class_names = tuple(str(i) for i in range(10))
    eval_split = "test"
    splits = ("train", "test")
    attribute_names = ()
    protected_attributes = ()
    options = {}
    image_shape = (8, 8, 1)


def _copy(run_dir, tmp_path):
  dst = str(tmp_path / "run")
  shutil.copytree(run_dir, dst)
  return dst


def test_member_with_other_ids_is_a_one_line_error(digits_run, tmp_path):
  run_dir, ids, labels = digits_run
  dst = _copy(run_dir, tmp_path)
  fake_run.write_member(dst, "prune_0.9", 2, "test", ids + 10000, labels, labels, 10, "digits")
  with pytest.raises(collect.CollectError, match="ids differ") as e:
    collect.load_run(dst)
  assert "\n" not in str(e.value)


def test_variant_with_other_ids_than_dense(tmp_path):
  run_dir = str(tmp_path)
  labels = np.zeros(4, np.int64)
  fake_run.write_member(run_dir, "dense", 0, "test", [1, 2, 3, 4], labels, labels, 10, "digits")
  fake_run.write_member(run_dir, "float16", 0, "test", [1, 2, 3, 5], labels, labels, 10, "digits")
  with pytest.raises(collect.CollectError, match="float16/test: example ids differ"):
    collect.load_run(run_dir, dataset=_FakeDataset())


def test_labels_that_disagree_with_dense(tmp_path):
  run_dir = str(tmp_path)
  fake_run.write_member(run_dir, "dense", 0, "test", [0, 3], [1, 2], [1, 2], 10, "digits")
  fake_run.write_member(run_dir, "float16", 0, "test", [0, 3], [1, 3], [1, 3], 10, "digits")
  with pytest.raises(collect.CollectError, match="labels differ"):
    collect.load_run(run_dir, dataset=_FakeDataset())


def test_missing_predictions_and_missing_dense(digits_run, tmp_path):
  with pytest.raises(collect.CollectError, match="no predictions directory"):
    collect.load_run(str(tmp_path / "nothing"))
  dst = _copy(digits_run[0], tmp_path)
  shutil.rmtree(os.path.join(dst, "predictions", "dense"))
  with pytest.raises(collect.CollectError, match="no 'dense' predictions"):
    collect.load_run(dst)


def test_unreadable_file(digits_run, tmp_path):
  dst = _copy(digits_run[0], tmp_path)
  with open(os.path.join(dst, "predictions", "full_int8", "1", "test.npz"), "wb") as f:
    f.write(b"not an npz")
  with pytest.raises(collect.CollectError, match="cannot read predictions"):
    collect.load_run(dst)


def test_ids_absent_from_the_data_set(tmp_path):
  run_dir = str(tmp_path)
  fake_run.write_member(run_dir, "dense", 0, "test", [999999], [1], [1], 2, "digits_biased")
  with pytest.raises(collect.CollectError, match="not in the data set"):
    collect.load_run(run_dir)


def test_biased_attributes_and_images_by_id(tmp_path):
  run_dir = str(tmp_path)
  ids, labels, attributes, _ = fake_run.make_biased_run(run_dir, members=2)
  run = collect.load_run(run_dir)
  assert run.protected_attributes == ("Inverted", "Faint")
  np.testing.assert_array_equal(run.attributes["Inverted"], attributes["Inverted"])
  # digits_biased plants positive ∧ Inverted at 13 of 1,297 train examples (its docstring).
  from tf_forget.data import registry

  train = registry.get("digits_biased").load("train")
  assert run.train_attribute_shares["Inverted"] == pytest.approx(
    train.attributes["Inverted"].mean()
  )
  images = collect.images_for(run, ids[[5, 0]])
  test = registry.get("digits_biased").load("test")
  np.testing.assert_array_equal(images, test.images[[5, 0]])


def test_sparse_twins_are_not_report_variants(digits_run, tmp_path):
  # `<variant>+sparse` predictions are checked against their plain twin by the
  # evaluator; the report's variants are the plain files only.
  run_dir = _copy(digits_run[0], tmp_path)
  root = os.path.join(run_dir, "predictions")
  shutil.copytree(os.path.join(root, "prune_0.9"), os.path.join(root, "prune_0.9+sparse"))
  shutil.copytree(os.path.join(root, "dense"), os.path.join(root, "float32+sparse"))
  run = collect.load_run(run_dir)
  assert "prune_0.9+sparse" not in run.variants and "float32+sparse" not in run.variants
  assert "prune_0.9" in run.variants
