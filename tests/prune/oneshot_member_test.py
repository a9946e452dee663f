"""One-shot members (docs/spec.md §6.1-6.4): parent link, exact counts, fixed masks,
validation-selected epoch, lineage, the exported file's sparsity.

One tiny dense parent (preset `tiny`, 60 steps on digits) is trained once per module; every
test prunes it into its own run directory (a copy of the parent).
"""

import json
import os
import shutil

import numpy as np
import pytest

from tf_forget.artifacts import hashing
from tf_forget.artifacts import layout
from tf_forget.export import export as export_lib
from tf_forget.export import flatbuffer
from tf_forget.prune import oneshot
from tf_forget.prune import oneshot_member
from tf_forget.prune import oneshot_schedule
from tf_forget.prune import scores
from tf_forget.train import epoch_selection
from tf_forget.train import member_config
from tf_forget.train import member_files
from tf_forget.train import population


@pytest.fixture(scope="module")
def parent_run(tmp_path_factory):
  run = str(tmp_path_factory.mktemp("parent"))
  pop = population.make_config(run, "tiny", variants=["dense"], members=1)
  population.train_population(pop, log=lambda line: None)
  return run, pop


@pytest.fixture
def run(parent_run, tmp_path):
  src, pop = parent_run
  dst = str(tmp_path / "run")
  shutil.copytree(src, dst)
  return dst, population.make_config(dst, "tiny", variants=["dense"], members=1)


def _config(pop, variant, **overrides):
  return oneshot_member.OneshotConfig(
    member=member_config.MemberConfig(
      dataset=pop.dataset, model=pop.model, variant=variant, k=0, preset=pop.preset
    ),
    protocol=oneshot_schedule.get("tiny", **overrides),
  )


def _kernels(run_dir, variant):
  model = member_files.load_model(layout.member_dir(run_dir, variant, 0))
  return {n: v.numpy() for n, v in oneshot.kernels(model).items()}


@pytest.mark.parametrize("algorithm", ["mp", "gp", "up", "rp"])
def test_member_prunes_the_parent_exactly_and_records_the_link(run, algorithm):
  run_dir, pop = run
  variant = f"oneshot_{algorithm}_r4"
  meta = oneshot_member.prune_member(_config(pop, variant), run_dir)
  parent_meta = member_files.read_metadata(layout.member_dir(run_dir, "dense", 0))
  parent = member_files.load_model(layout.member_dir(run_dir, "dense", 0))
  # The parent link names dense member 0 by its file's hash and by its weights' content hash.
  assert meta["parent"]["variant"] == "dense" and meta["parent"]["k"] == 0
  assert meta["parent"]["model_sha256"] == parent_meta["model_sha256"]
  assert meta["parent"]["weights_sha256"] == hashing.arrays_sha256(
    (w.name, w.numpy()) for w in parent.weights
  )
  # Exact count: keep = round(n / 4) of the n prunable kernel weights (docs/spec.md §6.3).
  n = sum(w.size for w in _kernels(run_dir, "dense").values())
  comp = meta["pruning"]["compression"]
  assert comp["total"] == n and comp["keep"] == int(n / 4 + 0.5)
  assert meta["pruning"]["pruned_weights"] == n - comp["keep"]
  zeros = sum(int((w == 0).sum()) for w in _kernels(run_dir, variant).values())
  assert zeros >= n - comp["keep"]  # fine-tuning may leave a kept weight at exactly 0 rarely
  assert zeros - (n - comp["keep"]) <= 2
  assert meta["sparsity"]["target"] == pytest.approx(0.75, abs=1 / n)
  # g and ε are recorded where they are used (docs/spec.md §6.2): GP and UP only; ε = 2λ for UP.
  # g is the parent's one artifact, recorded by its sha256 in the lineage.
  if algorithm in ("gp", "up"):
    assert meta["pruning"]["gradient"]["batches"] == 1
    assert meta["pruning"]["gradient"]["batch_size"] == 32
    g_path = os.path.join(run_dir, meta["pruning"]["gradient"]["path"])
    assert meta["inputs"]["gradient"] == hashing.file_sha256(g_path)
  else:
    assert meta["pruning"]["gradient"] is None
  if algorithm == "up":
    assert meta["pruning"]["eps"] == pytest.approx(2 * pop.preset.weight_decay)
  assert oneshot_member.status(run_dir, _config(pop, variant))


def test_fine_tuning_keeps_the_lowest_validation_loss_epoch_and_the_mask(run):
  run_dir, pop = run
  cfg = _config(pop, "oneshot_mp_r10", phases=((1, 0.05), (2, 0.01)))
  meta = oneshot_member.prune_member(cfg, run_dir)
  ft = meta["pruning"]["finetune"]
  losses = ft["validation_data_loss"]
  assert len(losses) == 4  # right after pruning, then 3 epochs
  assert ft["best_epoch"] == int(np.argmin(losses))
  # The saved model is the chosen epoch's: its validation data loss is the minimum.
  from tf_forget.data import registry

  dataset = registry.get("digits")
  _, val, _, n_val = epoch_selection.holdout(dataset, cfg.protocol.validation_every)
  assert ft["validation_examples"] == n_val == 130  # every 10th of 1,297
  batches = epoch_selection.batches(dataset, val)
  model = member_files.load_model(layout.member_dir(run_dir, "oneshot_mp_r10", 0))
  assert epoch_selection.data_loss(model, batches) == pytest.approx(min(losses), abs=1e-4)
  # The pruned set is MP's on the parent: the n/10 largest |θ| survive, and stay zero-free
  # elsewhere after fine-tuning (the mask was held fixed).
  parent = _kernels(run_dir, "dense")
  keep = scores.masks("mp", parent, meta["pruning"]["compression"]["pruned"])
  pruned = _kernels(run_dir, "oneshot_mp_r10")
  for name, mask in keep.items():
    assert not np.any(pruned[name][~mask]), name


def test_exported_file_has_the_sparsity(run):
  run_dir, pop = run
  meta = oneshot_member.prune_member(_config(pop, "oneshot_up_r10"), run_dir)
  export_lib.export_population(
    run_dir,
    dense_formats=("float32",),
    pruned_formats=("float32",),
    encodings=("plain",),
    members=[("oneshot_up_r10", 0)],
    log=lambda line: None,
  )
  path = os.path.join(run_dir, "tflite", "oneshot_up_r10", "0", "float32.tflite")
  with open(path, "rb") as f:
    stats = flatbuffer.weight_stats(f.read())
  comp = meta["pruning"]["compression"]
  assert stats["kernels"]["count"] == comp["total"]
  assert comp["pruned"] <= stats["kernels"]["zeros"] <= comp["pruned"] + 2


def test_ratio_over_all_parameters_and_exclude_classifier(run):
  run_dir, pop = run
  meta = oneshot_member.prune_member(
    _config(pop, "oneshot_mp_r2", ratio_over="all", exclude_classifier=True), run_dir
  )
  comp = meta["pruning"]["compression"]
  model = member_files.load_model(layout.member_dir(run_dir, "oneshot_mp_r2", 0))
  assert comp["total"] == oneshot.trainable_count(model)
  assert comp["keep"] == int(comp["total"] / 2 + 0.5)
  logits = oneshot.kernels(model)["logits"].numpy()
  assert np.count_nonzero(logits) == logits.size  # the classifier was left unpruned


def test_impossible_ratio_is_an_error(run):
  run_dir, pop = run
  with pytest.raises(scores.PruneError, match="cannot be met"):
    oneshot_member.prune_member(_config(pop, "oneshot_mp_r1000000"), run_dir)
  assert not os.path.exists(layout.member_metadata(run_dir, "oneshot_mp_r1000000", 0))


def test_current_member_is_reused_and_a_retrained_parent_makes_it_stale(run):
  run_dir, pop = run
  cfg = _config(pop, "oneshot_rp_r2")
  meta = oneshot_member.prune_member(cfg, run_dir)
  path = layout.member_model(run_dir, "oneshot_rp_r2", 0)
  stamp = os.path.getmtime(path)
  assert oneshot_member.prune_member(cfg, run_dir) == meta
  assert os.path.getmtime(path) == stamp
  # Another protocol is another member.
  other = _config(pop, "oneshot_rp_r2", phases=((1, 0.01),))
  assert "config" in oneshot_member.status(run_dir, other).reason
  # A parent whose recorded hash changed (retrained) makes the child stale, naming the parent.
  parent_meta_path = layout.member_metadata(run_dir, "dense", 0)
  with open(parent_meta_path) as f:
    parent_meta = json.load(f)
  parent_meta["model_sha256"] = "0" * 64
  with open(parent_meta_path, "w") as f:
    json.dump(parent_meta, f)
  state = oneshot_member.status(run_dir, cfg)
  assert not state and "parent dense/0" in state.reason


def test_missing_parent_is_one_line_error(tmp_path):
  pop = population.make_config(str(tmp_path), "tiny", variants=["dense"], members=1)
  with pytest.raises(oneshot_member.PruneMemberError, match="train the dense population first"):
    oneshot_member.prune_member(_config(pop, "oneshot_mp_r2"), str(tmp_path))


def test_same_config_gives_the_same_weights(run, tmp_path):
  run_dir, pop = run
  oneshot_member.prune_member(_config(pop, "oneshot_gp_r4"), run_dir)
  first = _kernels(run_dir, "oneshot_gp_r4")
  shutil.rmtree(layout.member_dir(run_dir, "oneshot_gp_r4", 0))
  oneshot_member.prune_member(_config(pop, "oneshot_gp_r4"), run_dir)
  again = _kernels(run_dir, "oneshot_gp_r4")
  for name in first:
    np.testing.assert_array_equal(first[name], again[name])
