"""What tfmot's pruning wrapper does (docs/spec.md §2.6), pinned; and our wrapping is equivalent."""

import numpy as np
import tensorflow as tf

from tf_forget.compat import keras2
from tf_forget.models import model_registry
from tf_forget.train import pruning

keras = keras2.keras()
tfmot = keras2.tfmot()


def _one_dense_model(schedule):
  """y = x · w with w = [1, 2, 3, 4], wrapped for pruning."""
  model = keras.Sequential(
    [
      keras.layers.Dense(
        1,
        use_bias=False,
        input_shape=(4,),
        kernel_initializer=keras.initializers.Constant([[1.0], [2.0], [3.0], [4.0]]),
      )
    ]
  )
  model = tfmot.sparsity.keras.prune_low_magnitude(model, pruning_schedule=schedule)
  # Loss -y: SGD with lr 1 adds x to w at every step.
  model.compile(optimizer=keras.optimizers.SGD(1.0), loss=lambda y, p: -tf.reduce_mean(p))
  return model


def _fit(model, steps):
  x = np.tile(np.array([[100.0, 0.0, 0.0, 0.0]], np.float32), (steps, 1))
  model.fit(
    x,
    np.zeros((steps, 1), np.float32),
    batch_size=1,
    epochs=1,
    verbose=0,
    shuffle=False,
    callbacks=pruning.callbacks(),
  )


def _mask_and_kernel(model):
  wrapper = pruning.wrappers(model)[0]
  _, mask, _ = wrapper.pruning_vars[0]
  return mask.numpy().ravel(), wrapper.layer.kernel.numpy().ravel()


def test_mask_is_applied_before_the_forward_pass_and_weights_keep_learning():
  # Mask update at step 1 only (begin 1, end 1): keep the 2 largest |w| = {3, 4}.
  model = _one_dense_model(tfmot.sparsity.keras.ConstantSparsity(0.5, begin_step=1, end_step=1))
  _fit(model, 1)
  mask, kernel = _mask_and_kernel(model)
  np.testing.assert_array_equal(mask, [0, 0, 1, 1])
  # The pruned w1 received its gradient update (+100) after the forward pass; tfmot's
  # UpdatePruningStep re-applies the mask at epoch end, so the variable shows 0 again.
  np.testing.assert_array_equal(kernel, [0, 0, 3, 4])


def test_masked_weight_reenters_at_a_later_mask_update():
  # Mask updates at steps 1 and 3. Step 1 prunes w1 (=1); its gradient then makes it 100 before
  # the step-3 ranking, which keeps {w1, w4}: a removed weight came back (docs/spec.md §2.6).
  model = _one_dense_model(
    tfmot.sparsity.keras.ConstantSparsity(0.5, begin_step=1, end_step=3, frequency=2)
  )
  _fit(model, 3)
  mask, kernel = _mask_and_kernel(model)
  np.testing.assert_array_equal(mask, [1, 0, 0, 1])
  np.testing.assert_array_equal(kernel != 0, [True, False, False, True])


def test_finalize_zeroes_weights_updated_after_the_last_mask():
  model = _one_dense_model(tfmot.sparsity.keras.ConstantSparsity(0.5, begin_step=1, end_step=1))
  _fit(model, 1)
  # One more optimiser step without an epoch end: the masked variable is non-zero again.
  model.train_on_batch(np.array([[100.0, 0, 0, 0]], np.float32), np.zeros((1, 1), np.float32))
  _, kernel = _mask_and_kernel(model)
  assert kernel[0] != 0
  stripped = pruning.finalize(model)
  np.testing.assert_array_equal(
    stripped.layers[0].kernel.numpy().ravel() != 0, [False, False, True, True]
  )
  report = pruning.sparsity_report(stripped, 0.5)
  assert report["prunable"] == 0.5 and report["meets_target"]


def _train_small_cnn(wrap_all_layers, seed=3):
  keras.utils.set_random_seed(seed)
  tf.config.experimental.enable_op_determinism()
  model = model_registry.get("small_cnn", (8, 8, 1), 10)
  model = pruning.wrap(
    model, 0.8, begin_step=2, end_step=10, frequency=2, wrap_all_layers=wrap_all_layers
  )
  model.compile(
    optimizer=keras.optimizers.SGD(0.05, momentum=0.9),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
  )
  rng = np.random.default_rng(0)
  x = rng.uniform(0, 255, (12 * 16, 8, 8, 1)).astype(np.float32)
  y = rng.integers(0, 10, 12 * 16)
  model.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0, callbacks=pruning.callbacks())
  return model


def test_wrapping_only_prunable_layers_gives_the_same_masks_and_weights():
  lean = _train_small_cnn(wrap_all_layers=False)
  full = _train_small_cnn(wrap_all_layers=True)
  assert len(pruning.wrappers(full)) > len(pruning.wrappers(lean))
  assert all(pruning.is_prunable(w.layer) for w in pruning.wrappers(lean))
  lean_k = dict(pruning.prunable_kernels(pruning.finalize(lean)))
  full_k = dict(pruning.prunable_kernels(pruning.finalize(full)))
  assert lean_k.keys() == full_k.keys()
  for name in lean_k:
    np.testing.assert_array_equal(lean_k[name].numpy() == 0, full_k[name].numpy() == 0)
    np.testing.assert_allclose(lean_k[name].numpy(), full_k[name].numpy(), rtol=1e-6, atol=1e-7)


def test_sparsity_report_counts_all_and_prunable_params():
  keras.utils.set_random_seed(0)
  model = keras.Sequential([keras.layers.Dense(4, input_shape=(10,))])
  kernel = model.layers[0].kernel
  values = kernel.numpy()
  values.ravel()[:30] = 0  # 30 of 40 kernel weights; 4 biases are 0 too (zeros initializer).
  kernel.assign(values)
  report = pruning.sparsity_report(model, 0.75)
  assert report["prunable"] == 0.75 and report["prunable_weights"] == 40
  assert report["all_params"] == (30 + 4) / 44
  assert report["meets_target"]
  assert not pruning.sparsity_report(model, 0.9)["meets_target"]
