"""Tests of the l-inf noise evaluation (003 §4.1; docs/spec.md §6.7) on a tiny trained model."""

import os

import numpy as np
import pytest

from tests.export import fake_run
from tf_forget.artifacts import noise_artifact
from tf_forget.evaluate import batched
from tf_forget.evaluate import noise_eval
from tf_forget.export import export

PROTOCOL = noise_artifact.NoiseProtocol(eps=(0.0, 0.2, 0.6), draws=3, examples=60, seed=7)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
  model, dataset, _ = fake_run.trained_exports()
  run_dir = str(tmp_path_factory.mktemp("run"))
  fake_run.write_member(run_dir, "dense", 0, model)
  fake_run.write_member(run_dir, "dense", 1, fake_run.train(fake_run.tiny_cnn(1), dataset))
  export.export_population(run_dir, ["float32", "full_int8"], ["float32"], dataset=dataset)
  metas = noise_eval.evaluate_population(run_dir, dataset, PROTOCOL)
  return run_dir, model, dataset, metas


def test_noise_is_added_to_the_normalized_input(run):
  # Second method: Keras on x + U(-eps, eps) * 255 (Rescaling(1/255) inside the model), the
  # uniform field drawn here directly from the documented generator.
  run_dir, model, dataset, _ = run
  art = noise_artifact.read(noise_artifact.path(run_dir, "dense", 0))
  examples = noise_eval.select_examples(dataset, PROTOCOL)
  np.testing.assert_array_equal(art["ids"], examples.ids)
  x = examples.images.astype(np.float32)
  for l, eps in enumerate(PROTOCOL.eps):
    for d in range(PROTOCOL.draws):
      u = np.random.default_rng([PROTOCOL.seed, d]).uniform(-eps, eps, size=x.shape)
      logits = model.predict(x + 255.0 * u.astype(np.float32), verbose=0)
      expected = np.exp(logits - logits.max(1, keepdims=True))
      expected /= expected.sum(1, keepdims=True)
      assert np.mean(art["top1"][l, d] == logits.argmax(1)) >= 0.98, (eps, d)
      np.testing.assert_allclose(art["softmax"][l, d], expected, atol=2e-3)
  # Accuracy falls with the noise level, as in 003 Figure 1 (the tiny model is near 100%).
  acc = (art["top1"] == art["labels"]).mean(axis=(1, 2))
  assert acc[0] > 0.9 and acc[-1] < acc[0]


def test_zero_level_equals_clean_predictions(run):
  run_dir, _, dataset, _ = run
  art = noise_artifact.read(noise_artifact.path(run_dir, "dense", 0))
  examples = noise_eval.select_examples(dataset, PROTOCOL)
  runner = batched.BatchedRunner(os.path.join(run_dir, "tflite", "dense", "0", "float32.tflite"))
  clean = runner.run(examples.images).argmax(1)
  for d in range(PROTOCOL.draws):
    np.testing.assert_array_equal(art["top1"][0, d], clean)


def test_every_plain_file_is_evaluated_and_a_rerun_skips(run):
  run_dir, _, dataset, metas = run
  assert sorted((m["variant"], m["k"]) for m in metas) == [
    ("dense", 0),
    ("dense", 1),
    ("full_int8", 0),
    ("full_int8", 1),
  ]
  assert all(m["noise_scale"] == [255.0] for m in metas)
  logs = []
  again = noise_eval.evaluate_population(run_dir, dataset, PROTOCOL, log=logs.append)
  assert all(line.startswith("skip ") for line in logs) and len(logs) == 4
  assert [m["seconds"] for m in again] == [m["seconds"] for m in metas]


def test_same_seed_same_arrays_other_protocol_recomputes(run, tmp_path):
  run_dir, _, dataset, _ = run
  path = noise_artifact.path(run_dir, "full_int8", 1)
  first = noise_artifact.read(path)
  tflite = os.path.join(run_dir, "tflite", "dense", "1", "full_int8.tflite")
  examples = noise_eval.select_examples(dataset, PROTOCOL)
  out = str(tmp_path / "again.npz")
  noise_eval.evaluate_file(tflite, examples, PROTOCOL, np.float32([255.0]), out)
  second = noise_artifact.read(out)
  for key in ("top1", "softmax", "ids", "eps"):
    np.testing.assert_array_equal(first[key], second[key])
  other = noise_artifact.NoiseProtocol(eps=(0.0, 0.2, 0.6), draws=2, examples=60, seed=7)
  meta, skipped = noise_eval.evaluate_file(tflite, examples, other, np.float32([255.0]), out)
  assert not skipped and meta["protocol"]["draws"] == 2


def test_subset_is_seeded_and_sorted():
  dataset = fake_run.SyntheticDataset()
  a = noise_eval.select_examples(dataset, noise_artifact.NoiseProtocol(examples=40, seed=3))
  b = noise_eval.select_examples(dataset, noise_artifact.NoiseProtocol(examples=40, seed=3))
  c = noise_eval.select_examples(dataset, noise_artifact.NoiseProtocol(examples=40, seed=4))
  np.testing.assert_array_equal(a.ids, b.ids)
  assert len(a) == 40 and np.all(np.diff(a.ids) > 0) and not np.array_equal(a.ids, c.ids)
  assert len(noise_eval.select_examples(dataset, noise_artifact.NoiseProtocol())) == 150


def test_noise_scale_follows_the_model_normalization():
  # (x / 255 - mean) / std + e  ==  ((x + 255 std e) / 255 - mean) / std.
  np.testing.assert_allclose(
    noise_eval.noise_scale({"std": [0.5, 0.25, 1.0]}, 3), [127.5, 63.75, 255.0]
  )
  np.testing.assert_allclose(noise_eval.noise_scale({}, 1), [255.0])


@pytest.mark.parametrize(
  "kwargs",
  [
    {"eps": (0.0, -0.1)},
    {"eps": (0.2, 0.1)},
    {"eps": ()},
    {"eps": (0.0, float("nan"))},
    {"draws": 0},
    {"examples": 0},
  ],
)
def test_bad_protocol_is_one_line(kwargs):
  with pytest.raises(noise_artifact.NoiseError) as e:
    noise_artifact.NoiseProtocol(**kwargs).check()
  assert "\n" not in str(e.value)


def test_truncated_artifact_is_an_error_and_not_complete(run, tmp_path):
  run_dir, _, _, _ = run
  src = noise_artifact.path(run_dir, "dense", 1)
  bad = tmp_path / "linf.npz"
  bad.write_bytes(open(src, "rb").read()[:500])
  with pytest.raises(noise_artifact.NoiseError, match="cannot read"):
    noise_artifact.read(str(bad))
  assert not noise_artifact.is_complete(str(bad), None, PROTOCOL)
