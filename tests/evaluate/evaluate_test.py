"""Evaluation of files and of a population: agreement, any Examples stream, re-run skip."""

import os

import numpy as np
import pytest

from tests.export import fake_run
from tf_forget.artifacts import errors
from tf_forget.artifacts import predictions
from tf_forget.data import dataset_api
from tf_forget.evaluate import agreement
from tf_forget.evaluate import evaluate
from tf_forget.evaluate import interpreter
from tf_forget.evaluate import population_eval
from tf_forget.export import export


@pytest.fixture(scope="module")
def exports():
  return fake_run.trained_exports()


def test_rebatch_recuts_any_stream():
  parts = [fake_run.make_examples(n, seed=n, start_id=100 * n) for n in (3, 10, 1, 7)]
  out = list(evaluate.rebatch(iter(parts), 4))
  assert [len(b) for b in out] == [4, 4, 4, 4, 4, 1]
  np.testing.assert_array_equal(
    np.concatenate([b.ids for b in out]), np.concatenate([p.ids for p in parts])
  )
  exact = [fake_run.make_examples(4, 0)] * 2
  assert [b is e for b, e in zip(evaluate.rebatch(exact, 4), exact)] == [True, True]


def test_replayable_reads_a_split_once_and_replays_the_same_batches():
  reads = []

  def stream(batch_size):
    reads.append(batch_size)
    return (fake_run.make_examples(batch_size, seed=i, start_id=10 * i) for i in range(3))

  replay = evaluate.replayable(stream)
  first, again = list(replay(4)), list(replay(4))
  assert reads == [4] and [a is b for a, b in zip(first, again)] == [True] * 3
  list(replay(2))  # another batch size is another stream
  assert reads == [4, 2]
  partial = evaluate.replayable(stream)
  next(iter(partial(4)))  # a stream read part-way is not kept
  list(partial(4))
  assert reads == [4, 2, 4, 4]
  over = evaluate.replayable(stream, budget=first[0].images.nbytes)  # too big to keep
  list(over(4)), list(over(4))
  assert reads == [4, 2, 4, 4, 4, 4]


def test_float32_and_float16_agree_with_keras(exports):
  # float32 TFLite vs Keras >= 99.9% top-1 agreement, float16 >= 99%.
  model, dataset, files = exports
  test = dataset.load("test")
  _, _, keras = agreement.keras_scores(model, [test])
  for fmt, threshold in (("float32", 0.999), ("float16", 0.99)):
    runner = evaluate.batched.BatchedRunner(files[fmt], batch_size=64)
    ids, labels, scores = evaluate.run(runner, dataset.batches("test", 50))
    np.testing.assert_array_equal(ids, test.ids)
    result = agreement.compare(scores, keras)
    assert result["top1_agreement"] >= threshold, (fmt, result)
    assert result["max_abs_logit_error"] < (1e-3 if fmt == "float32" else 0.1), (fmt, result)
  assert np.mean(np.argmax(keras, 1) == test.labels) > 0.9  # the model did learn


def test_keras_scores_equal_the_eager_call(exports):
  # The scores come from one compiled graph per batch shape; a second method, the model called
  # eagerly batch by batch, gives the same bits (batches of 7 leave a shorter last one).
  model, dataset, _ = exports
  test = dataset.load("test")
  _, _, scores = agreement.keras_scores(model, [test], batch_size=7)
  eager = [
    np.asarray(model(test.images[s : s + 7].astype(np.float32), training=False))
    for s in range(0, len(test.images), 7)
  ]
  np.testing.assert_array_equal(scores, np.concatenate(eager))


def test_keras_scores_of_model_after_model_log_no_retracing(exports, caplog):
  # A worker scores one member after another: each is traced once, which TensorFlow must not
  # report as "retracing" (it counts traces by the traced function's code).
  model, dataset, _ = exports
  test = dataset.load("test").take(np.arange(8))
  with caplog.at_level("WARNING", logger="tensorflow"):
    for _ in range(7):
      agreement.keras_scores(model, [test], batch_size=8)
  assert not [r for r in caplog.records if "retracing" in r.getMessage()]


def test_compare_is_exact_on_hand_values():
  a = np.array([[1.0, 2.0], [3.0, 0.0], [0.5, 0.5]])
  b = np.array([[1.5, 2.0], [1.0, 2.0], [0.5, 0.25]])
  # top-1: [1, 0, 0] vs [1, 1, 0] -> 2/3 agree; |a - b| = [.5, 0, 2, 2, 0, .25] -> max 2,
  # mean 4.75 / 6.
  assert agreement.compare(a, b) == {
    "n": 3,
    "top1_agreement": pytest.approx(2 / 3),
    "max_abs_logit_error": 2.0,
    "mean_abs_logit_error": pytest.approx(4.75 / 6),
  }
  with pytest.raises(agreement.AgreementError):
    agreement.compare(a, b, ids=[0, 1, 2], reference_ids=[0, 2, 1])


@pytest.fixture(scope="module")
def run(tmp_path_factory, exports):
  model, dataset, _ = exports
  run_dir = str(tmp_path_factory.mktemp("run"))
  fake_run.write_member(run_dir, "dense", 0, model)
  export.export_population(
    run_dir, ["float32", "float16", "dynamic_int8", "full_int8"], ["float32"], dataset=dataset
  )
  return run_dir, dataset


def test_population_evaluation_and_rerun_skip(run):
  run_dir, dataset = run
  logs = []
  tables = population_eval.evaluate_population(
    run_dir, dataset=dataset, batch_size=64, log=logs.append
  )
  table = tables["test"]
  variants = {r["variant"] for r in table["rows"]}
  assert variants == {"dense", "float16", "dynamic_int8", "full_int8"}
  s = table["summary_vs_keras"]
  assert s["dense"]["min_top1_agreement"] >= 0.999
  assert s["float16"]["min_top1_agreement"] >= 0.99
  assert table["summary_vs_float32_tflite"]["dense"]["max_abs_logit_error"] == 0.0
  assert s["full_int8"]["max_abs_logit_error"] > 0  # really quantized
  path = predictions.path(run_dir, "full_int8", 0, "test")
  data = predictions.read(path)
  assert data["topk"].shape == (150, fake_run.NUM_CLASSES)  # k = 4 classes < 5
  assert data["metadata"]["output_dtype"] == "int8" and data["logits"].dtype == np.float32
  assert os.path.exists(os.path.join(run_dir, "eval", "agreement", "test.json"))
  mtime = os.stat(path).st_mtime_ns
  logs.clear()
  population_eval.evaluate_population(run_dir, dataset=dataset, batch_size=64, log=logs.append)
  assert all(line.startswith("skip") for line in logs) and len(logs) == 4
  assert os.stat(path).st_mtime_ns == mtime


def test_custom_stream_like_a_corrupted_split(run):
  # Any iterable of Examples plugs in (as a corrupted split does): inverted images.
  run_dir, dataset = run

  def inverted(batch_size):
    for b in dataset.batches("test", 37):  # odd sizes are re-cut to the batch size
      yield dataset_api.Examples(images=255 - b.images, labels=b.labels, ids=b.ids)

  population_eval.evaluate_population(
    run_dir,
    dataset=dataset,
    split_batches={"invert@1": inverted},
    batch_size=64,
    check_keras=False,
    variants=["dense"],
  )
  data = predictions.read(predictions.path(run_dir, "dense", 0, "invert@1"))
  np.testing.assert_array_equal(data["ids"], dataset.load("test").ids)
  assert data["metadata"]["split"] == "invert@1"


def test_shape_mismatch_writes_nothing(run, tmp_path):
  run_dir, _ = run
  with pytest.raises(interpreter.TfliteError, match="does not match the data set"):
    population_eval.evaluate_population(
      run_dir, dataset=fake_run.SyntheticDataset((16, 16, 1)), splits=["train"]
    )
  assert not os.path.exists(predictions.path(run_dir, "dense", 0, "train"))


def test_unwritable_output(run, tmp_path):
  run_dir, dataset = run
  out = tmp_path / "blocked"
  out.write_text("a file, not a directory")
  with pytest.raises(errors.WriteError, match="cannot write"):  # one line, where it happens
    evaluate.evaluate_file(
      os.path.join(run_dir, "tflite", "dense", "0", "float32.tflite"),
      dataset.batches("test", 64),
      str(out / "test.npz"),
      "test",
    )


def test_registry_tfds_data_set_under_mock_data(tmp_path):
  # Any registry data set works: cifar10 through tfds.testing.mock_data (nothing downloaded),
  # exported to full_int8 with its own first train examples, evaluated on its test split.
  import tensorflow_datasets as tfds

  from tf_forget.data import registry

  run_dir = str(tmp_path)
  model = fake_run.tiny_cnn(0, num_classes=10, input_shape=(32, 32, 3))
  fake_run.write_member(run_dir, "dense", 0, model, dataset="cifar10")
  with tfds.testing.mock_data(num_examples=20):
    dataset = registry.get("cifar10")
    export.export_population(run_dir, ["full_int8"], ["float32"], representative_size=8)
    tables = population_eval.evaluate_population(run_dir, batch_size=16, check_keras=False)
  data = predictions.read(predictions.path(run_dir, "full_int8", 0, "test"))
  assert data["topk"].shape == (20, 5)
  assert tables["test"]["dataset"] == "cifar10" == dataset.spec.name
