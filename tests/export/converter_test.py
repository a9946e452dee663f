"""Conversion: hand-computed outputs, byte determinism, representative-data checks."""

import numpy as np
import pytest
import tensorflow as tf

from tests.export import fake_run
from tf_forget.artifacts import names
from tf_forget.evaluate import batched
from tf_forget.export import converter
from tf_forget.export import model_files


def test_float32_equals_hand_computed_outputs():
  # Flattened x = [1, 2, 3, 4]; by hand: x @ kernel = [1+0+3-8, 0+2+3+0, 2-2+3+2] = [-4, 5, 5],
  # plus bias [0.5, -1, 0] -> [-3.5, 4, 5]. x = [0, 0, 0, 0] -> bias. x = [2, 0, 0, 1] ->
  # [2-2, 0, 4+0.5] + bias = [0.5, -1, 4.5].
  images = np.array([[1, 2, 3, 4], [0, 0, 0, 0], [2, 0, 0, 1]], np.uint8).reshape(3, 2, 2, 1)
  expected = np.array([[-3.5, 4, 5], [0.5, -1, 0], [0.5, -1, 4.5]], np.float32)
  data = converter.convert(fake_run.hand_model(), "float32")
  scores = batched.BatchedRunner(data, batch_size=2).run(images)
  np.testing.assert_array_equal(scores, expected)


@pytest.fixture(scope="module")
def trained():
  dataset = fake_run.SyntheticDataset()
  return fake_run.train(fake_run.tiny_cnn(0), dataset), dataset


@pytest.mark.parametrize("fmt", list(names.FORMAT_NAMES))
def test_conversion_is_byte_deterministic(trained, fmt):
  model, dataset = trained
  rep = dataset.take("train", 20).images
  first = converter.convert(model, fmt, rep)
  second = converter.convert(model, fmt, rep)
  assert first[4:8] == b"TFL3"
  assert first == second


@pytest.mark.parametrize(
  "fmt, encoding",
  [(f, names.DEFAULT_ENCODING) for f in names.FORMAT_NAMES] + [("float32", "sparse")],
)
def test_variable_holder_gives_the_bytes_of_the_whole_model(trained, fmt, encoding, monkeypatch):
  # The converter saves the trackable object with the function; a `VariableHolder` of the
  # function's variables gives the same file as the tf_keras model itself.
  model, dataset = trained
  rep = dataset.take("train", 20).images
  light = converter.convert(model, fmt, rep, encoding)
  traced = model_files.trace

  def with_whole_model(m, spec):
    concrete, holder = traced(m, spec)
    assert isinstance(holder, model_files.VariableHolder)
    assert {id(v) for v in holder.held} == {id(v) for v in concrete.variables}
    return concrete, m

  monkeypatch.setattr(model_files, "trace", with_whole_model)
  assert converter.convert(model, fmt, rep, encoding) == light


def test_a_function_reading_another_resource_keeps_its_model():
  table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer([1], [2.0]), 0.0)
  scale = tf.Variable(3.0)
  concrete = tf.function(lambda x: table.lookup(x) * scale).get_concrete_function(
    tf.TensorSpec([None], tf.int32)
  )
  model = object()
  assert model_files._holder(concrete, model) is model
  plain = tf.function(lambda x: x * scale).get_concrete_function(tf.TensorSpec([None]))
  assert model_files._holder(plain, model).held == [scale]


def test_full_int8_has_int8_io_and_needs_representative_data(trained):
  model, dataset = trained
  with pytest.raises(converter.ConversionError, match="representative"):
    converter.convert(model, "full_int8")
  with pytest.raises(converter.ConversionError, match="shape"):
    converter.convert(model, "full_int8", np.zeros((4, 16, 16, 1), np.uint8))
  runner = batched.BatchedRunner(
    converter.convert(model, "full_int8", dataset.take("train", 20).images)
  )
  assert runner.input_dtype == np.int8 and runner.output_dtype == np.int8


def test_representative_data_changes_calibration(trained):
  # The representative set is really used: calibrating on black images only gives another
  # input range (scale) than calibrating on the train images.
  model, dataset = trained
  a = converter.convert(model, "full_int8", dataset.take("train", 20).images)
  b = converter.convert(model, "full_int8", np.zeros((20, 8, 8, 1), np.uint8))
  qa = batched.BatchedRunner(a).quantize
  qb = batched.BatchedRunner(b).quantize
  assert qa.scale != qb.scale


def test_unknown_format():
  with pytest.raises(names.FormatError):
    converter.convert(fake_run.hand_model(), "int4")
