"""One g per parent for GP and UP (docs/spec.md §6.2 "the same g for GP and UP").

One tiny dense parent (preset `tiny`, 60 steps on digits) is trained once per module; every
test prunes it into its own run directory (a copy of the parent). Checked: every GP and UP
member of a parent, at every ratio, reads the one g artifact and records its sha256; MP and RP
compute none; with g = 0 on a planted layer UP prunes that layer as MP does (docs/spec.md §6.1); a
changed parent model redoes g and the members; a garbage g file is redone with the same bytes
and leaves its members current.
"""

import glob
import hashlib
import json
import os

import numpy as np
import pytest

from tests.prune import parents
from tf_forget.artifacts import fileio
from tf_forget.artifacts import layout
from tf_forget.prune import gradient
from tf_forget.prune import oneshot
from tf_forget.prune import oneshot_member
from tf_forget.prune import oneshot_schedule
from tf_forget.prune import scores
from tf_forget.train import member_config
from tf_forget.train import member_files
from tf_forget.train import population

GP_UP = ["oneshot_gp_r4", "oneshot_up_r4", "oneshot_up_r10"]


@pytest.fixture(scope="module")
def parent_run(tmp_path_factory):
  return parents.train_tiny_parent(str(tmp_path_factory.mktemp("parent")))


@pytest.fixture
def pop(parent_run, tmp_path):
  return parents.copy_of(parent_run, str(tmp_path / "run"))


def _protocol():
  return oneshot_schedule.get("tiny")


def _config(pop, variant):
  return oneshot_member.OneshotConfig(
    member=member_config.MemberConfig(
      dataset=pop.dataset, model=pop.model, variant=variant, k=0, preset=pop.preset
    ),
    protocol=_protocol(),
  )


def _prune(pop, variants):
  """Runs the audit's g and one-shot stages; returns their log lines."""
  return parents.run_member_stages(pop, oneshot=variants, oneshot_schedule=_protocol())


def _meta(pop, variant):
  return member_files.read_metadata(layout.member_dir(pop.run_dir, variant, 0))


def _g_files(pop):
  return glob.glob(os.path.join(layout.member_dir(pop.run_dir, "dense", 0), "gradient", "*"))


def _sha(path):
  with open(path, "rb") as f:
    return hashlib.sha256(f.read()).hexdigest()


def _parent(pop):
  return _config(pop, GP_UP[0]).parent


def test_gp_and_up_members_of_a_parent_read_one_g(pop):
  _prune(pop, GP_UP + ["oneshot_mp_r4"])
  (g_file,) = _g_files(pop)
  assert g_file == gradient.path(pop.run_dir, _parent(pop), _protocol())
  g_sha = _sha(g_file)
  records = [_meta(pop, v)["pruning"]["gradient"] for v in GP_UP]
  for variant, rec in zip(GP_UP, records):
    assert rec["sha256"] == g_sha, variant
    assert _meta(pop, variant)["inputs"]["gradient"] == g_sha
    assert rec["path"] == os.path.relpath(g_file, pop.run_dir)
  assert len({r["positions_sha256"] for r in records}) == 1
  assert records[0]["batches"] == 1 and records[0]["batch_size"] == 32
  # g records the parent model it was computed from.
  _, meta = gradient.read(g_file)
  assert meta["parent"]["model_sha256"] == _meta(pop, "dense")["model_sha256"]
  assert meta["seed"] == gradient.seed(_parent(pop)) != _parent(pop).seed
  # MP reads no gradient.
  mp = _meta(pop, "oneshot_mp_r4")
  assert mp["pruning"]["gradient"] is None and "gradient" not in mp["inputs"]


def test_mp_and_rp_compute_no_gradient(pop):
  _prune(pop, ["oneshot_mp_r2", "oneshot_rp_r2"])
  assert _meta(pop, "oneshot_rp_r2")["pruning"]["gradient"] is None
  assert not os.path.exists(os.path.join(layout.member_dir(pop.run_dir, "dense", 0), "gradient"))


def _layer_prunes_as_mp(theta, kept):
  """Whether the pruned weights of a layer are its smallest |θ| (docs/spec.md §6.1: g = 0 → MP)."""
  a = np.abs(theta)
  return bool(np.all(kept) or np.all(~kept) or a[~kept].max() <= a[kept].min())


def test_up_prunes_a_layer_whose_g_is_zero_as_mp(pop):
  parent = _parent(pop)
  grad = gradient.ensure(pop.run_dir, parent, _protocol())
  model = member_files.load_model(layout.member_dir(pop.run_dir, "dense", 0))
  theta = {n: v.numpy() for n, v in oneshot.kernels(model).items()}
  eps = _protocol().epsilon(pop.preset.weight_decay)
  pruned = scores.compression(sum(w.size for w in theta.values()), ratio=4).pruned
  real = scores.masks("up", theta, pruned, grads=grad.grads, eps=eps)
  # A layer where UP with the real g does not prune as MP (else the check below could not fail).
  layer = next(n for n in theta if not _layer_prunes_as_mp(theta[n], real[n]))
  planted = dict(grad.grads, **{layer: np.zeros_like(grad.grads[layer])})
  gradient.write(grad.path, planted, grad.metadata)
  meta = oneshot_member.prune_member(_config(pop, "oneshot_up_r4"), pop.run_dir)
  assert meta["pruning"]["gradient"]["sha256"] == _sha(grad.path) != grad.sha256
  kernel = oneshot.kernels(
    member_files.load_model(layout.member_dir(pop.run_dir, "oneshot_up_r4", 0))
  )[layer].numpy()
  assert _layer_prunes_as_mp(theta[layer], kernel != 0)
  assert 0 < np.count_nonzero(kernel) < kernel.size


def _perturb_parent(pop):
  """Replaces the parent's model.keras by other weights (as a retraining would)."""
  directory = layout.member_dir(pop.run_dir, "dense", 0)
  model = member_files.load_model(directory)
  kernel = oneshot.kernels(model)["logits"]
  kernel.assign(kernel * 1.5)
  meta = member_files.read_metadata(directory)
  meta["model_sha256"] = member_files.save_model(model, os.path.join(directory, "model.keras"))
  fileio.write_json(os.path.join(directory, "metadata.json"), meta)
  return meta["model_sha256"]


def test_a_changed_parent_model_redoes_g_and_the_members(pop):
  _prune(pop, GP_UP[:2])
  before = _sha(gradient.path(pop.run_dir, _parent(pop), _protocol()))
  new_parent = _perturb_parent(pop)
  state = gradient.current(pop.run_dir, _parent(pop), _protocol())
  assert not state and "model.keras changed" in state.reason
  log = _prune(pop, GP_UP[:2])
  assert any(l.startswith("redo gradient dense/0: its model.keras changed") for l in log), log
  for variant in GP_UP[:2]:
    assert any(l.startswith(f"redo members {variant}/0:") for l in log), log
  g_file = gradient.path(pop.run_dir, _parent(pop), _protocol())
  after = _sha(g_file)
  assert after != before
  assert gradient.read(g_file)[1]["parent"]["model_sha256"] == new_parent
  for variant in GP_UP[:2]:
    meta = _meta(pop, variant)
    assert meta["pruning"]["gradient"]["sha256"] == after
    assert meta["parent"]["model_sha256"] == new_parent
    assert oneshot_member.status(pop.run_dir, _config(pop, variant))


def _truncate(path):
  with open(path, "rb") as f:
    data = f.read()
  with open(path, "wb") as f:
    f.write(data[: len(data) // 2])


def _alter_arrays(path):
  """A readable npz whose arrays are not the ones its metadata's arrays_sha256 records."""
  arrays, meta = fileio.read_npz_with_metadata(path, "gradient")
  arrays["g_0"] = arrays["g_0"] + 1.0
  fileio.write_npz(path, metadata=np.array(json.dumps(meta, sort_keys=True)), **arrays)


@pytest.mark.parametrize(
  "spoil, reason",
  [
    (_truncate, "it is unreadable"),
    (_alter_arrays, "do not match its recorded arrays_sha256"),
  ],
)
def test_a_garbage_g_is_redone_with_the_same_bytes(pop, spoil, reason):
  _prune(pop, GP_UP[:2])
  g_file = gradient.path(pop.run_dir, _parent(pop), _protocol())
  good = _sha(g_file)
  stamp = os.path.getmtime(layout.member_model(pop.run_dir, GP_UP[0], 0))
  spoil(g_file)
  state = oneshot_member.status(pop.run_dir, _config(pop, GP_UP[0]))
  assert not state and "gradient g of dense/0 is not current" in state.reason
  log = _prune(pop, GP_UP[:2])
  assert any(l.startswith("redo gradient dense/0:") and reason in l for l in log), log
  # Deterministic: the same parent and protocol give the same bytes, so the members that
  # read g stay current and are not fine-tuned again.
  assert _sha(g_file) == good
  assert not any(l.startswith("redo members") for l in log), log
  assert os.path.getmtime(layout.member_model(pop.run_dir, GP_UP[0], 0)) == stamp


def test_a_member_redoes_a_garbage_g_itself(pop):
  cfg = _config(pop, "oneshot_gp_r4")
  oneshot_member.prune_member(cfg, pop.run_dir)
  g_file = gradient.path(pop.run_dir, _parent(pop), _protocol())
  good = _sha(g_file)
  _truncate(g_file)
  lines = []
  meta = oneshot_member.prune_member(cfg, pop.run_dir, log=lines.append)
  assert _sha(g_file) == good == meta["pruning"]["gradient"]["sha256"]
  assert any(l.startswith("redo gradient dense/0: it is unreadable") for l in lines), lines


def test_a_parent_that_is_not_finished_is_one_line(tmp_path):
  pop = population.make_config(str(tmp_path), "tiny", variants=["dense"], members=1)
  with pytest.raises(gradient.GradientError, match="train the dense population first"):
    gradient.ensure(pop.run_dir, _parent(pop), _protocol())
