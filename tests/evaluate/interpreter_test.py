"""The interpreter factory: bad files, quantized I/O against manual (de)quantization."""

import numpy as np
import pytest

from tests.export import fake_run
from tf_forget.evaluate import interpreter


@pytest.fixture(scope="module")
def exports():
  return fake_run.trained_exports()


@pytest.mark.parametrize(
  "content,match",
  [
    (b"", "not a TFLite flatbuffer"),
    (b"garbage" * 20, "not a TFLite flatbuffer"),
  ],
)
def test_non_tflite_files(tmp_path, content, match):
  path = tmp_path / "bad.tflite"
  path.write_bytes(content)
  with pytest.raises(interpreter.TfliteError, match=match) as info:
    interpreter.create(str(path))
  assert "\n" not in str(info.value)


@pytest.mark.parametrize("keep", [0.5, 0.9, 0.99])
def test_truncated_file(tmp_path, exports, keep):
  data = exports[2]["float32"]
  path = tmp_path / "truncated.tflite"
  path.write_bytes(data[: int(len(data) * keep)])  # keeps the TFL3 identifier
  with pytest.raises(interpreter.TfliteError, match="not a valid TFLite model") as info:
    interpreter.create(str(path))
  assert "\n" not in str(info.value)


def test_missing_file(tmp_path):
  with pytest.raises(interpreter.TfliteError, match="cannot read"):
    interpreter.create(str(tmp_path / "nope.tflite"))


def test_factory_options(exports):
  interp = interpreter.create(exports[2]["float32"], num_threads=1, batch_size=7)
  assert list(interp.get_input_details()[0]["shape"]) == [7, 8, 8, 1]
  with pytest.raises(interpreter.TfliteError, match="num_threads"):
    interpreter.create(exports[2]["float32"], num_threads=0)
  with pytest.raises(interpreter.TfliteError, match="runtime"):
    interpreter.create(exports[2]["float32"], runtime="gpu")
  interpreter.create(exports[2]["full_int8"], runtime="builtin")


def test_input_quantizer_formula():
  # scale 0.5, zero point -3: x = 1.25 -> 2.5 -> round half away 3 -> 0; x = 0.75 -> 1.5 -> 2
  # -> -1; x = 255 -> 510 -> clamp 127; x = -1 -> -2 -> -5 (half away from zero, not to even).
  q = interpreter.InputQuantizer({"name": "x", "dtype": np.int8, "quantization": (0.5, -3)})
  np.testing.assert_array_equal(q.quantize([1.25, 0.75, 255.0, -1.0]), [0, -1, 127, -5])
  images = np.arange(256, dtype=np.uint8).reshape(4, 8, 8, 1)
  np.testing.assert_array_equal(q(images), q.quantize(images.astype(np.float32)))
  f = interpreter.InputQuantizer({"name": "x", "dtype": np.float32, "quantization": (0.0, 0)})
  assert f(images).dtype == np.float32 and np.array_equal(f(images), images)
  into = np.full(images.shape, -1.0, np.float32)
  assert f(images, out=into) is into and np.array_equal(into, images)
  np.testing.assert_array_equal(f(images), f.quantize(images.astype(np.float32)))


def test_output_dequantizer_formula():
  d = interpreter.OutputDequantizer({"name": "y", "dtype": np.int8, "quantization": (0.25, -10)})
  np.testing.assert_array_equal(
    d(np.array([[-10, -6, 127, -128]], np.int8)), [[0.0, 1.0, 34.25, -29.5]]
  )


def test_full_int8_io_matches_manual_quantization(exports):
  # Run the int8 file by hand: quantize with the input tensor's scale / zero point, invoke,
  # dequantize with the output's; the factory's quantizers must give the same numbers.
  _, dataset, files = exports
  images = dataset.load("test").images[:16]
  interp = interpreter.create(files["full_int8"], batch_size=16)
  inp, out = interp.get_input_details()[0], interp.get_output_details()[0]
  (s_in, z_in), (s_out, z_out) = inp["quantization"], out["quantization"]
  assert inp["dtype"] == np.int8 and out["dtype"] == np.int8 and s_in > 0 and s_out > 0
  manual_in = np.clip(np.floor(images / s_in + 0.5) + z_in, -128, 127).astype(np.int8)
  interp.set_tensor(inp["index"], manual_in)
  interp.invoke()
  manual_out = (interp.get_tensor(out["index"]).astype(np.float32) - z_out) * s_out
  quantizer = interpreter.InputQuantizer(inp)
  np.testing.assert_array_equal(quantizer(images), manual_in)
  np.testing.assert_allclose(
    interpreter.OutputDequantizer(out)(interp.get_tensor(out["index"])),
    manual_out,
    rtol=0,
    atol=1e-6,
  )
  # Feeding un-quantized pixels (the classic bug) gives different predictions.
  interp.set_tensor(inp["index"], images.astype(np.int8))
  interp.invoke()
  wrong = (interp.get_tensor(out["index"]).astype(np.float32) - z_out) * s_out
  assert not np.array_equal(np.argmax(wrong, 1), np.argmax(manual_out, 1))
