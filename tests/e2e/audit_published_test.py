"""`--robustness=published`: planning, identity, one-line errors, the cost plan, and
a tiny cifar10 audit under `tfds.testing.mock_data` that evaluates TFLite files on the
published splits through the executor tasks and the sequential stage (nothing is downloaded)."""

import glob
import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from tests import audit_main
from tests import binary_main
from tf_forget.artifacts import errors
from tf_forget.artifacts import predictions
from tf_forget.config import tree
from tf_forget.corruptions import published_suites
from tf_forget.data import registry
from tf_forget.pipeline import audit_lib
from tf_forget.pipeline import audit_plan
from tf_forget.pipeline import eval_tasks
from tf_forget.pipeline import run_identity

SPLITS = ["gaussian_noise@3", "glass_blur@3"]


def _config(out, overrides=None):
  """A tiny cifar10 population: the small CNN, 2 members, dense and its float16 files;
  `overrides`: {field path: value} (`tree.with_overrides`)."""
  config = tree.AuditConfig(
    out=str(out),
    data=tree.Data(dataset="cifar10"),
    population=tree.Population(
      model="small_cnn",
      members=2,
      variants=("dense",),
      steps=4,
      preset_overrides={"batch_size": 4, "checkpoint_every": 4, "augmentation": "none"},
    ),
    formats=tree.Formats(quantizations=("float16",)),
    robustness=tree.Robustness(
      source="published", corruptions=("gaussian_noise", "glass_blur"), severities=(3,)
    ),
    noise=tree.Noise(levels=()),
    deployment=tree.Deployment(encoding="plain"),
  )
  return tree.with_overrides(config, overrides or {})


def _missing(prefix):
  """An `as_dataset_fn`: builders named `prefix...` are not prepared (as tfds says it), the
  others give 4 random CIFAR-shaped examples."""

  def as_dataset(self, split, decoders=None, read_config=None, **kwargs):
    del split, decoders, read_config, kwargs
    if self.name.startswith(prefix):
      raise AssertionError(f"Dataset {self.name}: could not find data in {self.data_dir}.")
    rng = np.random.default_rng(0)
    return tf.data.Dataset.from_tensor_slices(
      {
        "image": rng.integers(0, 256, (4, 32, 32, 3), dtype=np.uint8),
        "label": rng.integers(0, 10, 4),
        "id": np.array([b"x"] * 4),
      }
    )

  return as_dataset


def test_plan_published_on_cifar10(tmp_path):
  with tfds.testing.mock_data(num_examples=4):
    p = audit_plan.plan(_config(tmp_path))
  assert p.robustness == "published" and p.corrupted == tuple(SPLITS)
  assert p.extra_splits == ("cifar10_1",) and p.published.corrupted == "cifar10_corrupted"
  identity = run_identity.audit_identity(p)
  assert identity["robustness"] == {
    "source": "published",
    "corrupted_suite": "cifar10_corrupted",
    "extra_splits": {"cifar10_1": "cifar10_1"},
  }
  assert identity["corruptions"] == SPLITS
  assert _config(tmp_path).to_json()["robustness"]["source"] == "published"
  # The default records nothing new: run directories made before the option keep their identity.
  generated = _config(tmp_path, {"robustness.source": "generated"})
  g = audit_plan.plan(generated, check_data=False)
  assert g.published is None and g.extra_splits == ()
  assert "robustness" not in run_identity.audit_identity(g)


def test_published_on_digits_is_one_line_naming_it(tmp_path):
  config = tree.AuditConfig(out=str(tmp_path), robustness=tree.Robustness(source="published"))
  with pytest.raises(published_suites.PublishedError) as e:
    audit_plan.plan(config, check_data=False)
  assert "\n" not in str(e.value) and str(e.value).startswith(
    "data set 'digits' has no published robustness suite"
  )
  code = binary_main.run_main(
    audit_main.main, "audit", dataset="digits", robustness="published", plan=True
  )
  assert code == f"audit: error: {e.value}"
  with pytest.raises(tree.AuditError, match="robustness.source must be one of generated, "):
    audit_plan.plan(
      tree.AuditConfig(out=str(tmp_path), robustness=tree.Robustness(source="both")),
      check_data=False,
    )


def test_unprepared_published_split_is_one_line_naming_builder_and_data_dir(tmp_path):
  data_dir = str(tmp_path / "tfds")
  config = _config(tmp_path / "run", {"data.data_dir": data_dir})
  with tfds.testing.mock_data(as_dataset_fn=_missing("cifar10_1")):
    with pytest.raises(errors.Error) as e:
      audit_plan.plan(config)
  message = str(e.value)
  assert "\n" not in message and "tfds builder 'cifar10_1/v6'" in message and data_dir in message
  assert not os.path.exists(tmp_path / "run")
  with tfds.testing.mock_data(as_dataset_fn=_missing("nothing")):
    assert audit_plan.plan(config).extra_splits == ("cifar10_1",)


def test_cost_plan_generates_nothing_and_evaluates_cifar10_1():
  def counts(robustness):
    text = audit_plan.plan_report(
      tree.AuditConfig(
        out="/nonexistent",
        data=tree.Data(dataset="cifar10"),
        population=tree.Population(members=5, variants=("dense",)),
        formats=tree.Formats(quantizations=()),
        robustness=tree.Robustness(source=robustness, corruptions=("fog",), severities=(3,)),
      )
    )
    return {line.split()[0]: line for line in text.splitlines()[1:5]}

  generated, pub = counts("generated"), counts("published")
  assert "1 splits x 10.0 k = 10.0 k images" in generated["corruptions"]
  assert "0 splits x 10.0 k = 0 images" in pub["corruptions"]
  # 5 robustness files (docs/spec.md §1.5) x 10,000 fog@3 images, + CIFAR-10.1's 2,000 when
  # published.
  assert "corrupted 50.0 k" in generated["evaluation"]
  assert "corrupted 60.0 k" in pub["evaluation"]


def _published_files(run):
  return sorted(
    os.path.relpath(p, run)
    for s in SPLITS + ["cifar10_1"]
    for p in glob.glob(os.path.join(run, "predictions", "*", "*", f"{s}.npz"))
  )


def test_tiny_audit_evaluates_tflite_files_on_the_published_splits(tmp_path):
  run = str(tmp_path / "run")
  logs = []
  with tfds.testing.mock_data(num_examples=8):
    # The robustness stage's tasks (tf_forget.pipeline.file_stages ->
    # tf_forget.pipeline.eval_tasks.evaluate_files, in this process); its finish writes the published
    # splits' agreement tables from their files.
    report, _ = audit_lib.run_audit(
      _config(run, {"execution.executor": "local", "execution.workers": 0}), log=logs.append
    )
    suite = published_suites.PublishedSuite(registry.get("cifar10"), SPLITS + ["cifar10_1"])
    want_ids = {s: suite.identity(s) for s in suite.splits}
  files = _published_files(run)
  # dense and float16 (the plain variants), members 0 and 1, 3 published splits.
  assert len(files) == 2 * 2 * 3, files
  for path in files:
    data = predictions.read(os.path.join(run, path))
    split = os.path.basename(path)[:-4]
    assert data["metadata"]["inputs"]["split"] == want_ids[split]
    assert ("logits" in data) == (split == "cifar10_1")
    assert data["ids"].tolist() == list(range(8))
  assert not os.path.exists(os.path.join(run, "corruptions"))  # nothing generated
  assert not any(line.lstrip().startswith("redo") for line in logs)
  # The tasks made them: for each of the 2 members, its 2 plain files on 2 chunks of the 3
  # published splits (about 4 tasks per worker).
  assert "[evaluate corruptions] 4 tasks on inline (driver process)" in logs, logs
  for split in SPLITS + ["cifar10_1"]:
    assert os.path.exists(os.path.join(run, "eval", "agreement", f"{split}.json")), split
  audit_json = json.loads(open(os.path.join(run, "audit.json")).read())
  assert audit_json["config"]["robustness"]["corrupted_suite"] == "cifar10_corrupted"
  robust = {(r["variant"], r["corruption"]) for r in report["tables"]["robustness"]}
  assert robust == {(v, c) for v in ("dense", "float16") for c in ("gaussian_noise", "glass_blur")}
  rows = report["tables"]["published_splits"]
  assert [(r["variant"], r["split"], r["members"]) for r in rows] == [
    ("dense", "cifar10_1", 2),
    ("float16", "cifar10_1", 2),
  ]
  assert report["settings"]["published"]["splits"] == ["cifar10_1"]
  page = open(os.path.join(run, "report.html")).read()
  assert "<section id=\"published\">" in page
  # Again on another executor (inline) on the same directory: everything is reused.
  stamps = {p: os.path.getmtime(os.path.join(run, p)) for p in files}
  logs = []
  with tfds.testing.mock_data(num_examples=8):
    audit_lib.run_audit(_config(run), log=logs.append)
  assert {p: os.path.getmtime(os.path.join(run, p)) for p in files} == stamps
  assert not any("tasks on" in line for line in logs), logs
  assert not any(line.lstrip().startswith("redo") for line in logs)
  assert eval_tasks.published_suite(registry.get("cifar10"), ["cifar10_1"])[2] == {
    "cifar10_1": want_ids["cifar10_1"]
  }
