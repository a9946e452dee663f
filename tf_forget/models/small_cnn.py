"""A small CNN sized for scikit-learn's `digits` (8×8×1, 10 classes), the embedded default.

Not from a paper: the offline stand-in for 000's / 002's models, so that a whole population
(dense + pruned members) trains on 2 CPU cores in minutes. It is sized so that pruning to
90-99% (docs/spec.md §2.3) is meaningful: 159,264 prunable kernel weights out of 159,626 parameters
on 8×8×1 input with 10 classes (most of them in `conv3` and `fc1`).

Architecture (input 8×8×1; "same" padding, ReLU after every conv and `fc1`):

  =========  ==========================  =============  =======
  layer      op                          output         params
  =========  ==========================  =============  =======
  rescale    x / 255 (+ mean/std)        8×8×1          0
  conv1      3×3 conv, 32                8×8×32         320
  conv2      3×3 conv, 64                8×8×64         18,496
  pool1      2×2 max pool                4×4×64         0
  conv3      3×3 conv, 128               4×4×128        73,856
  pool2      2×2 max pool                2×2×128        0
  flatten                                512            0
  dropout    rate `dropout_rate`         512            0
  fc1        dense 128                   128            65,664
  dropout    rate `dropout_rate`         128            0
  logits     dense 10                    10             1,290
  =========  ==========================  =============  =======

Convs and dense layers have biases and no BatchNorm (the model is shallow enough to train
without it, and every weight is then a plain kernel or bias that tfmot / TFLite see as is).
Larger inputs work (e.g. 28×28 MNIST) but `fc1` grows with H·W/16.
"""

from tf_forget.compat import keras2
from tf_forget.models import model_kit

# Smallest H / W: two 2×2 max pools must leave at least 1×1.
MIN_SIZE = 4


def small_cnn(
  input_shape,
  num_classes,
  *,
  filters=(32, 64, 128),
  hidden_units=128,
  dropout_rate=0.25,
  weight_decay=0.0,
  mean=None,
  std=None,
):
  """Builds the small CNN (see the module docstring for the layer table).

  Args:
    input_shape: `(H, W, C)`, H and W >= 4; `(8, 8, 1)` for `digits`.
    num_classes: number of logits (10 for `digits`).
    filters: the three conv widths.
    hidden_units: width of `fc1`.
    dropout_rate: dropout before `fc1` and before the logits (0 disables it).
    weight_decay: λ of `keras.regularizers.l2(λ)` on every conv / dense kernel; in
      docs/spec.md §6.1's notation ε = 2λ (see `model_kit.l2`). Default 0.
    mean: optional per-channel mean on the [0, 1] scale (`model_kit.image_input`).
    std: optional per-channel std on the [0, 1] scale.

  Returns:
    A `keras.Model` named "small_cnn": float32 "image" `[batch, H, W, C]` in [0, 255] ->
    logits `[batch, num_classes]`.

  Raises:
    model_kit.ModelError: a bad shape, class count or option value.
  """
  keras = keras2.keras()
  input_shape = model_kit.check_input_shape(input_shape, min_size=MIN_SIZE)
  num_classes = model_kit.check_num_classes(num_classes)
  try:
    filters = tuple(int(f) for f in filters)
  except (TypeError, ValueError):
    filters = ()
  if len(filters) != 3 or min(filters) < 1:
    raise model_kit.ModelError(f"filters must be three positive ints, got {filters!r}")
  if not isinstance(hidden_units, int) or hidden_units < 1:
    raise model_kit.ModelError(f"hidden_units must be a positive int, got {hidden_units!r}")
  dropout_rate = model_kit.check_dropout_rate(dropout_rate)

  inputs, x = model_kit.image_input(input_shape, mean=mean, std=std)
  for i, (width, pool) in enumerate(zip(filters, (False, True, True)), start=1):
    x = model_kit.conv(width, 3, use_bias=True, weight_decay=weight_decay, name=f"conv{i}")(x)
    x = model_kit.relu(name=f"conv{i}_relu")(x)
    if pool:
      x = keras.layers.MaxPooling2D(2, name=f"pool{i - 1}")(x)
  x = keras.layers.Flatten(name="flatten")(x)
  if dropout_rate:
    x = keras.layers.Dropout(dropout_rate, name="dropout1")(x)
  x = model_kit.dense(
    hidden_units, weight_decay=weight_decay, kernel_initializer="he_normal", name="fc1"
  )(x)
  x = model_kit.relu(name="fc1_relu")(x)
  if dropout_rate:
    x = keras.layers.Dropout(dropout_rate, name="dropout2")(x)
  logits = model_kit.dense(num_classes, weight_decay=weight_decay, name="logits")(x)
  return keras.Model(inputs, logits, name="small_cnn")
