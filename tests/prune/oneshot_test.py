"""One-shot pruning of a Keras model and fixed-mask fine-tuning (docs/spec.md §6.2-6.4).

Tiny models built here; the gradient is checked against a second method (the closed form of a
softmax regression, in numpy).
"""

import numpy as np
import pytest

from tf_forget.artifacts import names
from tf_forget.compat import keras2
from tf_forget.prune import oneshot
from tf_forget.prune import scores

keras = keras2.keras()


def _softmax_regression(l2=0.0):
  keras.utils.set_random_seed(0)
  inputs = keras.Input([4])
  outputs = keras.layers.Dense(
    3, name="logits", kernel_regularizer=keras.regularizers.l2(l2) if l2 else None
  )(inputs)
  return keras.Model(inputs, outputs)


def _batches(n=2, size=5, seed=0):
  rng = np.random.default_rng(seed)
  return [
    (rng.normal(size=(size, 4)).astype(np.float32), rng.integers(0, 3, size)) for _ in range(n)
  ]


def test_mean_gradient_is_the_data_loss_gradient():
  # Softmax regression: dL/dW of the mean cross-entropy is xᵀ(softmax(xW + b) − onehot(y)) / B;
  # g is its mean over the batches. The L2 term of the kernel is not part of the data loss.
  model = _softmax_regression(l2=0.1)
  w, b = (v.numpy().astype(np.float64) for v in model.get_layer("logits").weights)
  batches = _batches()
  want = np.zeros_like(w)
  for x, y in batches:
    z = x.astype(np.float64) @ w + b
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    want += x.T @ (p - np.eye(3)[y]) / len(y)
  want /= len(batches)
  got = oneshot.mean_gradient(model, batches, num_batches=2)
  np.testing.assert_allclose(got["logits"], want, rtol=1e-5, atol=1e-7)
  with pytest.raises(scores.PruneError, match="over 3 batches, got 2"):
    oneshot.mean_gradient(model, batches, num_batches=3)


def _cnn():
  keras.utils.set_random_seed(1)
  inputs = keras.Input([8, 8, 1])
  x = keras.layers.Conv2D(4, 3, name="conv")(inputs)
  x = keras.layers.BatchNormalization(name="bn")(x)
  x = keras.layers.ReLU()(x)
  x = keras.layers.Flatten()(x)
  outputs = keras.layers.Dense(10, name="logits")(x)
  return keras.Model(inputs, outputs)


def _images(n=16, seed=0):
  rng = np.random.default_rng(seed)
  return rng.normal(size=(n, 8, 8, 1)).astype(np.float32), rng.integers(0, 10, n)


def test_gradient_leaves_batchnorm_statistics_untouched():
  model = _cnn()
  before = [v.numpy().copy() for v in model.get_layer("bn").weights]
  oneshot.mean_gradient(model, [_images()], num_batches=1)
  for a, b in zip(before, model.get_layer("bn").weights):
    np.testing.assert_array_equal(a, b.numpy())


@pytest.mark.parametrize("algorithm", names.ONESHOT_ALGORITHMS)
def test_prune_removes_the_exact_count_of_weights(algorithm):
  model = _cnn()
  masks, comp = oneshot.prune(model, algorithm, ratio=4, batches=[_images()], eps=2e-4, seed=3)
  n = 3 * 3 * 1 * 4 + 6 * 6 * 4 * 10  # conv + dense kernels = 36 + 1440 = 1476
  assert (comp.total, comp.keep) == (n, 369)  # 1476 / 4 = 369 exactly
  weights = oneshot.kernels(model)
  assert sum(int(np.count_nonzero(v.numpy())) for v in weights.values()) == 369
  for name, v in weights.items():
    assert not np.any(v.numpy()[~masks[name]])


def test_exclude_classifier_prunes_only_the_other_kernels():
  model = _cnn()
  dense = model.get_layer("logits").kernel.numpy().copy()
  masks, comp = oneshot.prune(model, "mp", ratio=2, exclude_classifier=True)
  assert list(masks) == ["conv"] and (comp.total, comp.keep) == (36, 18)
  np.testing.assert_array_equal(model.get_layer("logits").kernel.numpy(), dense)


def test_fine_tuning_keeps_the_masks_fixed():
  model = _cnn()
  masks, _ = oneshot.prune(model, "mp", ratio=10)
  kept_before = {n: v.numpy()[masks[n]].copy() for n, v in oneshot.kernels(model).items()}
  model.compile(
    optimizer=keras.optimizers.SGD(0.1, momentum=0.9),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
  )
  x, y = _images(64, seed=1)
  model.fit(x, y, batch_size=16, epochs=2, verbose=0, callbacks=[oneshot.FixedMasks(masks)])
  for name, v in oneshot.kernels(model).items():
    w = v.numpy()
    assert not np.any(w[~masks[name]]), name  # pruned weights stayed exactly 0
    assert not np.array_equal(w[masks[name]], kept_before[name]), name  # kept ones trained


def test_gp_without_batches_is_one_line():
  with pytest.raises(scores.PruneError, match="GP needs training batches"):
    oneshot.prune(_cnn(), "gp", ratio=2)
