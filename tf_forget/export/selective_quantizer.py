"""Full-int8 files with chosen ops kept in float: the repairs and the causal ablations.

Made with the calibration `tf_forget.export.layer_error` uses (TensorFlow's
QuantizationDebugger, its `denylisted_nodes`; the facts behind it are in that module's
docstring), so a file here is the plain full_int8 file but for the ops named.
"""

import tensorflow as tf

from tf_forget.export import converter
from tf_forget.export import layer_error


class SelectiveQuantizer:
  """Full-int8 files (int8 in- and output) with chosen ops kept in float, calibrated once as
  `layer_errors` calibrates (the repairs; the ablations: two files per op).

  A call is the debugger's `denylisted_nodes` + `get_nondebug_quantized_model()`: each op kept
  in float reads DEQUANTIZE of its int8 input, runs in float with float weights, and QUANTIZE
  feeds its output on to the next int8 op. `nodes` are the names it accepts (the
  `tensor_name`s of `layer_errors` / `rank_layers` rows), in no particular order; each set's
  file is made once. The constructor raises converter.ConversionError as `layer_errors` does.
  """

  def __init__(self, model, representative_images):
    self.debugger = layer_error.make_debugger(model, representative_images)
    self.nodes = frozenset(
      n for outs in layer_error.op_outputs(self.debugger.calibrated_model).values() for _, n in outs
    )
    self._made = {}

  def __call__(self, float_nodes):
    """The `.tflite` bytes with `float_nodes` (a name or names; [] the plain file) in float.

    Raises:
      layer_error.LayerErrorError: a name that is not an op output of the model (it would be ignored).
      converter.ConversionError: the quantizer failed.
    """
    float_nodes = [float_nodes] if isinstance(float_nodes, str) else list(float_nodes)
    unknown = [n for n in float_nodes if n not in self.nodes]
    if unknown:
      raise layer_error.LayerErrorError(
        f"no op has output tensor {unknown[0]!r} (names: the tensor_name of layer_errors rows)"
      )
    key = tuple(sorted(float_nodes))
    if key in self._made:
      return self._made[key]
    try:
      with layer_error.quiet():
        self.debugger.options = tf.lite.experimental.QuantizationDebugOptions(
          fully_quantize=True, denylisted_nodes=float_nodes or None
        )
        self._made[key] = self.debugger.get_nondebug_quantized_model()
        return self._made[key]
    except Exception as e:
      raise converter.ConversionError(
        f"quantization debugger failed: {' '.join(str(e).split())[:300]}"
      ) from e
