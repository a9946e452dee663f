"""Populations: variants x members, run.json, skip on re-run, progress, bad input."""

import os
import subprocess
import sys

import pytest

from tf_forget.artifacts import names
from tf_forget.train import population
from tf_forget.train import presets
from tf_forget.train import shared_step

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_variant_names():
  assert names.parse_trained("prune_0.90").name == "prune_0.9"
  assert names.parse_trained("prune_.5").sparsity == 0.5
  assert names.parse_trained("dense").sparsity == 0
  for bad in ("prune_1.0", "prune_0", "sparse", "prune_0.9+full_int8"):
    with pytest.raises(names.VariantError):
      names.parse_trained(bad)


def test_default_variants_follow_the_preset():
  config = population.make_config("/tmp/x", "celeb_a_paper")
  assert config.variants == (
    "dense",
    "prune_0.3",
    "prune_0.5",
    "prune_0.7",
    "prune_0.9",
    "prune_0.95",
    "prune_0.99",
  )  # docs/spec.md §2.3
  assert config.members == 30  # docs/spec.md §1.5
  assert config.preset.pruning_schedule() == (1000, 9000, 500)  # 004 / docs/spec.md §2.2
  assert presets.get("cifar10_paper").pruning_schedule() == (8000, 72000, 4000)  # docs/spec.md §2.2


def test_mixed_precision_is_refused_for_pruned_variants():
  # tfmot's pruning misses its target under mixed_float16 (tests/train/member_test.py): a
  # one-line error before any training, not a failed member after it.
  with pytest.raises(population.PopulationError, match="only dense members support"):
    population.make_config("/tmp/x", "tiny", mixed_precision=True)
  config = population.make_config("/tmp/x", "tiny", variants=["dense"], mixed_precision=True)
  assert config.preset.mixed_precision


def test_population_trains_then_skips_everything(tmp_path, monkeypatch):
  config = population.make_config(str(tmp_path), "tiny", members=2)
  lines = []
  built = []
  shared_step.clear()
  monkeypatch.setattr(shared_step, "Trainer", _counted(shared_step.Trainer, built))
  metas = population.train_population(config, log=lines.append)
  # Trained grouped by variant, so one compiled step per variant serves both its members.
  assert [line.split("] ")[1].split(" (seed")[0] for line in lines if "] training" in line] == [
    "training dense k=0",
    "training dense k=1",
    "training prune_0.5 k=0",
    "training prune_0.5 k=1",
  ]
  assert len(built) == 2
  assert [(m["variant"], m["k"]) for m in metas] == [
    ("dense", 0),
    ("prune_0.5", 0),
    ("dense", 1),
    ("prune_0.5", 1),
  ]
  assert any("[4/4]" in line and "ETA" in line for line in lines)
  lines.clear()
  again = population.train_population(config, log=lines.append)
  assert again == metas
  assert "(4 already finished)" in lines[0]
  assert not any("training" in line for line in lines)


def _counted(cls, built):
  class Counted(cls):
    def __init__(self, *args, **kwargs):
      built.append(1)
      super().__init__(*args, **kwargs)

  return Counted


def test_run_dir_of_another_population_is_refused(tmp_path):
  population.train_population(
    population.make_config(str(tmp_path), "tiny", members=1, variants=["dense"]), log=lambda _: None
  )
  other = population.make_config(str(tmp_path), "tiny", members=1, variants=["dense"], steps=40)
  with pytest.raises(population.PopulationError, match="different preset"):
    population.train_population(other, log=lambda _: None)


@pytest.mark.parametrize(
  "flag, message",
  [
    ("--dataset=nope", "unknown data set 'nope'"),
    ("--variants=prune_1.5", "unknown variant 'prune_1.5'"),
    ("--preset=huge", "unknown preset 'huge'"),
  ],
)
def test_binary_bad_input_is_one_line_and_non_zero(tmp_path, flag, message):
  cmd = [
    sys.executable,
    os.path.join(ROOT, "tf_forget/train/train_population.py"),
    f"--run_dir={tmp_path / 'run'}",
    flag,
  ]
  done = subprocess.run(
    cmd, env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, text=True, timeout=120
  )
  assert done.returncode != 0
  last = done.stderr.strip().splitlines()[-1]
  assert message in last and last.startswith("train_population: error:")
  assert not (tmp_path / "run" / "members").exists()
