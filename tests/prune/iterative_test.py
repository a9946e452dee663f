"""Iterative prune-retrain (003 Algorithm 1, docs/spec.md §6.5): names, the keep-ratio schedule,
WT / FT masks, whole filters in the exported file, cycles with parent links, resume.

Masks are checked on tiny models built here; the cycles run on one tiny dense parent (preset
`tiny`, 60 steps on digits) trained once per module and copied into each test's run directory.
"""

import json
import os
import shutil

import numpy as np
import pytest

from tests.prune import parents
from tf_forget.artifacts import layout
from tf_forget.artifacts import names
from tf_forget.compat import keras2
from tf_forget.export import converter
from tf_forget.export import export as export_lib
from tf_forget.export import flatbuffer
from tf_forget.prune import iterative_schedule as ip
from tf_forget.prune import pruned_population
from tf_forget.prune import retrain
from tf_forget.prune import scores
from tf_forget.prune import structured
from tf_forget.train import member_files
from tf_forget.train import population

keras = keras2.keras()


# --- names and schedule ---------------------------------------------------------------------


def test_names_link_each_cycle_to_the_one_before():
  v = names.parse_trained("iter_ft_c3")
  assert (v.method, v.algorithm, v.cycle, v.parent, v.pruned) == (
    "iterative",
    "ft",
    3,
    "iter_ft_c2",
    True,
  )
  assert names.parse_trained("iter_wt_c1").parent == "dense"
  assert [x.name for x in names.iterative_variants(["wt"], 3)] == [
    "iter_wt_c1",
    "iter_wt_c2",
    "iter_wt_c3",
  ]
  for bad in ("iter_mp_c1", "iter_wt_c0", "iter_wt"):
    with pytest.raises(names.VariantError):
      names.parse_trained(bad)


def test_torchprune_schedule_is_the_released_configs():
  # Second method: the released config's spacing (torchprune paper/lost/param/cifar/
  # resnet20.yaml) with numpy, split as its `_split_keep_ratios` does (array_split, last of
  # each of the 23 chunks).
  spaced = np.concatenate(
    [np.geomspace(0.99, 0.855, 2), np.geomspace(0.85, 0.15, 58), np.linspace(0.132, 0.02, 9)]
  )
  expected = [chunk[-1] for chunk in np.array_split(spaced, 23)]
  got = ip.torchprune_keep_ratios()
  np.testing.assert_allclose(got, expected, rtol=0, atol=1e-11)
  # docs/spec.md §6.5 prints the first three and the last.
  assert [round(k, 3) for k in got[:3]] == [0.85, 0.776, 0.708] and got[-1] == 0.02
  assert (
    ip.get("resnet20_003" if "resnet20_003" in _presets() else "cifar10_paper").keep_ratios == got
  )


def _presets():
  from tf_forget.train import presets

  return presets.names()


def test_alpha_schedule_and_overrides():
  p = ip.get("digits")
  assert (p.schedule, p.keep_ratios) == ("alpha", (0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625))
  assert ip.get("digits", cycles=2).keep_ratios == (0.5, 0.25)
  assert ip.get("cifar10_paper", alpha=0.85, cycles=3).keep_ratios == (0.85, 0.7225, 0.614125)
  assert ip.get("cifar10_paper", cycles=4).keep_ratios == ip.torchprune_keep_ratios()[:4]
  assert ip.IterativeSchedule.from_json(json.loads(json.dumps(p.to_json()))) == p
  for kwargs, message in [
    ({"alpha": 1.0}, "alpha"),
    ({"cycles": 24}, "1..23"),
    ({"warmup": 1}, "no option"),
    ({"retrain_steps": 0}, ">= 1"),
  ]:
    with pytest.raises(ip.IterativeScheduleError, match=message):
      ip.get("cifar10_paper", **kwargs)
  with pytest.raises(ip.IterativeScheduleError, match="decrease"):
    ip.IterativeSchedule("x", (0.5, 0.5)).check()


# --- masks ----------------------------------------------------------------------------------


def _conv_bn_model(seed=0):
  """conv(6) -> BN -> ReLU -> conv(8) -> BN -> ReLU -> GAP -> dense(5) -> dense(3) logits."""
  keras.utils.set_random_seed(seed)
  x = inputs = keras.Input((6, 6, 2))
  x = keras.layers.Conv2D(6, 3, padding="same", name="c1")(x)
  x = keras.layers.BatchNormalization(name="b1")(x)
  x = keras.layers.ReLU()(x)
  x = keras.layers.Conv2D(8, 3, padding="same", use_bias=False, name="c2")(x)
  x = keras.layers.BatchNormalization(name="b2")(x)
  x = keras.layers.ReLU()(x)
  x = keras.layers.GlobalAveragePooling2D()(x)
  x = keras.layers.Dense(5, activation="relu", name="d1")(x)
  model = keras.Model(inputs, keras.layers.Dense(3, name="logits")(x))
  for bn in ("b1", "b2"):  # non-trivial γ, β so that zeroing them is visible
    layer = model.get_layer(bn)
    layer.gamma.assign(np.linspace(0.5, 1.5, layer.gamma.shape[0]))
    layer.beta.assign(np.linspace(-0.3, 0.3, layer.beta.shape[0]))
  return model


def test_wt_reaches_each_keep_ratio_exactly_and_never_revives():
  model = _conv_bn_model()
  total = sum(int(np.prod(v.shape)) for v in structured.oneshot.kernels(model).values())
  previous = None
  for keep in ip.alpha_keep_ratios(0.6, 4):
    masks, var_masks = structured.prune(model, "wt", keep, previous)
    kept = int(sum(m.sum() for m in masks.values()))
    assert kept == structured.kept_count(total, keep)  # exact, ⌊κn + ½⌋
    zeros, n = structured.kernel_sparsity(model)
    assert n == total and zeros >= total - kept
    if previous is not None:  # what an earlier cycle removed stays removed
      assert all(not (m & ~previous[k]).any() for k, m in masks.items())
    previous = masks
  # Global: the smallest kept |θ| is at least the largest pruned |θ| of this cycle's scores.
  assert set(var_masks) == {v.name for v in structured.oneshot.kernels(model).values()}


def test_kept_count_reads_the_ratio_as_written():
  assert structured.kept_count(200, 0.015) == 3  # 0.015 * 200 = 3 exactly, not 2.9999…
  assert structured.kept_count(10, 0.25) == 3  # 2.5 rounds half up
  with pytest.raises(scores.PruneError, match="keep ratio"):
    structured.prune(_conv_bn_model(), "wt", 1.0)
  with pytest.raises(scores.PruneError, match="unknown iterative"):
    structured.prune(_conv_bn_model(), "mp", 0.5)


def test_ft_removes_whole_filters_bias_and_batch_norm_but_not_the_classifier():
  model = _conv_bn_model()
  norms = {l.name: structured.filter_norms(l) for l in structured.filter_layers(model)}
  assert list(norms) == ["c1", "c2", "d1"]  # the classifier's outputs are never pruned
  masks, var_masks = structured.prune(model, "ft", 0.5)
  assert {k: int(m.sum()) for k, m in masks.items()} == {"c1": 3, "c2": 4, "d1": 3}  # ⌊f/2+½⌋
  for name, mask in masks.items():
    layer = model.get_layer(name)
    # The lowest-L1 filters went (hand check against the norms taken before pruning).
    assert set(np.flatnonzero(~mask)) == set(
      np.argsort(norms[name], kind="stable")[: (~mask).sum()]
    )
    kernel = layer.kernel.numpy()
    assert np.all(kernel[..., ~mask] == 0) and np.all(
      np.any(kernel[..., mask] != 0, axis=tuple(range(kernel.ndim - 1)))
    )
    if layer.bias is not None:
      assert np.all(layer.bias.numpy()[~mask] == 0)
  for conv, bn in (("c1", "b1"), ("c2", "b2")):
    gamma, beta = model.get_layer(bn).gamma.numpy(), model.get_layer(bn).beta.numpy()
    assert np.all(gamma[~masks[conv]] == 0) and np.all(beta[~masks[conv]] == 0)
    assert np.all(gamma[masks[conv]] != 0)
  assert structured.batch_norm_after(model, model.get_layer("d1")) is None
  assert np.all(model.get_layer("logits").kernel.numpy() != 0)
  # The removed channels output exactly 0 after BN + ReLU, whatever the input.
  probe = keras.Model(model.inputs, model.get_layer("b2").output)
  out = probe(
    np.random.default_rng(0).uniform(-5, 5, (4, 6, 6, 2)).astype(np.float32), training=False
  ).numpy()
  assert np.all(out[..., ~masks["c2"]] == 0)
  # Cumulative: a second cycle keeps a subset of the first cycle's filters.
  masks2, _ = structured.prune(model, "ft", 0.25, previous=masks)
  assert all(not (masks2[k] & ~masks[k]).any() for k in masks)
  assert {k: int(m.sum()) for k, m in masks2.items()} == {"c1": 2, "c2": 2, "d1": 1}


def test_ft_pruned_filters_are_whole_zero_slices_in_the_exported_file():
  model = _conv_bn_model()
  masks, _ = structured.prune(model, "ft", 0.5)
  data = converter.convert(model, "float32")
  zero = flatbuffer.zero_filters(data)
  removed = sorted(int((~m).sum()) for m in masks.values())
  # BN folds into the conv kernels; the zeroed filters stay all-zero output channels.
  assert sorted(z for z, _ in zero.values() if z) == removed
  assert sorted(n for _, n in zero.values()) == [3, 5, 6, 8]


@pytest.mark.parametrize("algorithm", ["wt", "ft"])
def test_held_masks_keep_entries_at_zero_through_training(algorithm):
  model = _conv_bn_model()
  _, var_masks = structured.prune(model, algorithm, 0.5)
  model.compile(
    optimizer=keras.optimizers.SGD(0.5),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
  )
  rng = np.random.default_rng(1)
  x, y = rng.uniform(0, 1, (32, 6, 6, 2)).astype(np.float32), rng.integers(0, 3, 32)
  model.fit(x, y, epochs=2, batch_size=8, verbose=0, callbacks=[structured.HeldMasks(var_masks)])
  structured.check_zero(model, var_masks)
  if algorithm == "wt":  # without the callback, pruned weights get gradients and come back
    model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    with pytest.raises(RuntimeError, match="revived"):
      structured.check_zero(model, var_masks)
  # (A whole filter with kernel, bias, γ and β at zero gets zero gradients: it stays dead
  # anyway — the callback guards it against weight-decay-free optimizers that still move it.)


# --- cycles ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def parent_run(tmp_path_factory):
  return parents.train_tiny_parent(str(tmp_path_factory.mktemp("parent")))


@pytest.fixture
def run(parent_run, tmp_path):
  dst = str(tmp_path / "run")
  return dst, parents.copy_of(parent_run, dst)


def _config(pop, variant, **overrides):
  return pruned_population.iterative_configs(pop, [variant], ip.get("tiny", **overrides))[-1]


def test_cycles_chain_parent_links_and_reach_the_keep_ratios(run):
  run_dir, pop = run
  proto = ip.get("tiny")
  parents.run_member_stages(pop, iterative=["iter_wt_c2", "iter_ft_c2"], iterative_schedule=proto)
  by = {
    c.member.variant: member_files.read_metadata(layout.member_dir(run_dir, c.member.variant, 0))
    for c in pruned_population.iterative_configs(pop, ["iter_wt_c2", "iter_ft_c2"], proto)
  }
  assert list(by) == ["iter_wt_c1", "iter_ft_c1", "iter_wt_c2", "iter_ft_c2"]
  dense = member_files.read_metadata(os.path.join(run_dir, "members", "dense", "0"))
  for alg in ("wt", "ft"):
    c1, c2 = by[f"iter_{alg}_c1"], by[f"iter_{alg}_c2"]
    assert (
      c1["parent"]["variant"] == "dense" and c1["parent"]["model_sha256"] == dense["model_sha256"]
    )
    assert c2["parent"] == {
      "variant": f"iter_{alg}_c1",
      "k": 0,
      "model_sha256": c1["model_sha256"],
      "test_accuracy": c1["test_accuracy"],
    }
    assert [c1["pruning"]["keep_ratio"], c2["pruning"]["keep_ratio"]] == [0.5, 0.25]
    assert c2["pruning"]["retrain"]["warmup_steps"] == 20  # 0.5 epochs of 1297 // 32 steps
    assert c2["steps"] == 60
  total = by["iter_wt_c1"]["pruning"]["prunable_weights"]
  for c, keep in (("c1", 0.5), ("c2", 0.25)):
    assert by[f"iter_wt_{c}"]["pruning"]["kept_weights"] == structured.kept_count(total, keep)
    filters = by[f"iter_ft_{c}"]["pruning"]["filters_kept"]
    assert all(k == structured.kept_count(n, keep) for k, n in filters.values())
  # The exported file of the FT member shows the removed filters.
  export_lib.export_population(
    run_dir,
    dense_formats=("float32",),
    pruned_formats=("float32",),
    encodings=("plain",),
    members=[("iter_ft_c2", 0)],
    log=lambda line: None,
  )
  with open(os.path.join(run_dir, "tflite", "iter_ft_c2", "0", "float32.tflite"), "rb") as f:
    zero = flatbuffer.zero_filters(f.read())
  removed = sorted(n - k for k, n in by["iter_ft_c2"]["pruning"]["filters_kept"].values())
  assert sorted(z for z, _ in zero.values() if z) == removed


def test_resumed_cycle_equals_an_uninterrupted_one_and_lineage(run, tmp_path):
  run_dir, pop = run
  cfg = _config(pop, "iter_wt_c1")
  whole = retrain.retrain_member(cfg, run_dir)
  other = str(tmp_path / "resumed")
  shutil.copytree(run_dir, other, ignore=shutil.ignore_patterns("iter_*"))
  assert retrain.retrain_member(cfg, other, stop_after_chunks=1) is None  # "killed"
  assert os.path.isdir(os.path.join(other, "members", "iter_wt_c1", "0", "checkpoints"))
  resumed = retrain.retrain_member(cfg, other)
  assert resumed["resumed_from_step"] == 20
  a = member_files.load_model(os.path.join(run_dir, "members", "iter_wt_c1", "0"))
  b = member_files.load_model(os.path.join(other, "members", "iter_wt_c1", "0"))
  for wa, wb in zip(a.get_weights(), b.get_weights()):
    np.testing.assert_array_equal(wa, wb)
  assert resumed["test_accuracy"] == whole["test_accuracy"]
  # Current when nothing changed; stale when the protocol or the parent changes.
  assert retrain.status(run_dir, cfg)
  assert not retrain.status(run_dir, _config(pop, "iter_wt_c1", warmup_epochs=1))
  dense_meta = os.path.join(run_dir, "members", "dense", "0", "metadata.json")
  meta = json.loads(open(dense_meta).read())
  meta["model_sha256"] = "0" * 64
  with open(dense_meta, "w") as f:
    json.dump(meta, f)
  state = retrain.status(run_dir, cfg)
  assert not state and "parent dense/0 is not current" in state.reason


def test_missing_parent_is_a_one_line_error(tmp_path):
  pop = population.make_config(str(tmp_path), "tiny", variants=["dense"], members=1)
  with pytest.raises(retrain.RetrainError, match="not finished") as e:
    retrain.retrain_member(_config(pop, "iter_ft_c2"), str(tmp_path))
  assert "\n" not in str(e.value)
