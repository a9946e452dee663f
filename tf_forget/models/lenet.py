"""LeNet-5 for MNIST / Fashion-MNIST (002 §6: "an adaptation of LeNet5 [40]").

Two variants (option `variant`):

* `"shrinkbench"` (default) — 002's model. 002 prunes with ShrinkBench (Blalock et al. 2020) and
  calls its network "an adaptation of LeNet5"; ShrinkBench's `LeNet`
  (github.com/JJGO/shrinkbench, models/mnistnet.py) is: 3×3 conv 6, ReLU, 2×2 max pool;
  3×3 conv 16, ReLU, 2×2 max pool; dense 120, ReLU; dense 84, ReLU; dense 10 — all with
  biases, "valid" convolutions. On 28×28×1 input the flattened map is 5×5×16 = 400 (the
  `16 * 5 * 5` ShrinkBench hard-codes) and the model has 60,074 parameters:
  60 + 880 + 48,120 + 10,164 + 850.

* `"lecun1998"` — LeCun et al. 1998 §II.B layer sizes with today's usual simplifications:
  C1 5×5 conv 6 ("same" padding, i.e. the 28×28 digit centred in a 32×32 field as §II.A),
  S2 2×2 max pool, C3 5×5 conv 16 ("valid"), S4 2×2 max pool, C5 dense 120 (= the 5×5 conv
  on the 5×5 map), F6 dense 84, output dense 10; ReLU throughout. On 28×28×1: 61,706
  parameters. LeCun's own count is 60,840: C1 156, S2 12, C3 1,516, S4 32, C5 48,120,
  F6 10,164, RBF output 840 (§II.B). The differences: C3 here connects every S2 map
  (2,416 instead of 1,516 with Table I's connection scheme: +900), the subsamplings are
  parameter-free max pools (−12, −32), and the output is a dense layer with biases (+10).

Both stay standard Keras layers (tfmot / TFLite); inputs other than 28×28 change the dense
layer's fan-in (Flatten adapts).
"""

from tf_forget.compat import keras2
from tf_forget.models import model_kit

# variant -> (conv kernel size, C1 padding, conv widths, dense widths, smallest H / W).
VARIANTS = {
  "shrinkbench": (3, "valid", (6, 16), (120, 84), 10),
  "lecun1998": (5, "same", (6, 16), (120, 84), 12),
}


def lenet5(
  input_shape, num_classes, *, variant="shrinkbench", weight_decay=0.0, mean=None, std=None
):
  """Builds LeNet-5 (see the module docstring for the two variants).

  Args:
    input_shape: `(H, W, C)`, 28×28×1 for MNIST; H and W >= 10 ("shrinkbench") or 12
      ("lecun1998").
    num_classes: number of logits.
    variant: "shrinkbench" (002's model) or "lecun1998".
    weight_decay: λ of `keras.regularizers.l2(λ)` on every conv / dense kernel (ε = 2λ in
      docs/spec.md §6.1's notation, see `model_kit.l2`). Default 0 (002 §6.1 gives none for LeNet).
    mean: optional per-channel mean on the [0, 1] scale (`model_kit.image_input`).
    std: optional per-channel std on the [0, 1] scale.

  Returns:
    A `keras.Model` named "lenet5": float32 "image" `[batch, H, W, C]` in [0, 255] ->
    logits `[batch, num_classes]`.

  Raises:
    model_kit.ModelError: an unknown variant or a bad shape / option value.
  """
  keras = keras2.keras()
  if variant not in VARIANTS:
    raise model_kit.ModelError(f"unknown lenet5 variant {variant!r} (known: {', '.join(VARIANTS)})")
  kernel, first_padding, conv_widths, dense_widths, min_size = VARIANTS[variant]
  input_shape = model_kit.check_input_shape(input_shape, min_size=min_size)
  num_classes = model_kit.check_num_classes(num_classes)

  inputs, x = model_kit.image_input(input_shape, mean=mean, std=std)
  for i, width in enumerate(conv_widths, start=1):
    x = model_kit.conv(
      width,
      kernel,
      padding=first_padding if i == 1 else "valid",
      use_bias=True,
      weight_decay=weight_decay,
      kernel_initializer="glorot_uniform",
      name=f"conv{i}",
    )(x)
    x = model_kit.relu(name=f"conv{i}_relu")(x)
    x = keras.layers.MaxPooling2D(2, name=f"pool{i}")(x)
  x = keras.layers.Flatten(name="flatten")(x)
  for i, units in enumerate(dense_widths, start=1):
    x = model_kit.dense(units, weight_decay=weight_decay, name=f"fc{i}")(x)
    x = model_kit.relu(name=f"fc{i}_relu")(x)
  logits = model_kit.dense(num_classes, weight_decay=weight_decay, name="logits")(x)
  return keras.Model(inputs, logits, name="lenet5")
