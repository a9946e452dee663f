"""The per-data-set protocols (tf_forget/data/protocols/) and the stages that read them."""

import subprocess
import sys

import pytest

from tf_forget.artifacts import names
from tf_forget.artifacts import noise_artifact
from tf_forget.config import tree
from tf_forget.corruptions import corruption_registry
from tf_forget.data import dataset_api
from tf_forget.data import registry
from tf_forget.data import sources
from tf_forget.data.protocols import protocol_registry as protocols
from tf_forget.data.protocols import schema
from tf_forget.export import default_formats
from tf_forget.pipeline import trained_plan
from tf_forget.prune import iterative_schedule
from tf_forget.prune import oneshot_schedule
from tf_forget.train import presets


def test_every_registry_data_set_has_a_consistent_protocol():
  # The user's own data (folder:, tfds:, tfrecord:) is audited with the user's own model
  # (tf_forget/pipeline/user_plan.py), never trained on: it has no protocol.
  assert set(protocols.PROTOCOLS) == set(registry.DATASETS) - set(sources.PREFIXES)
  for name, p in protocols.PROTOCOLS.items():
    assert p.dataset == name and p.preset in presets.names()
    for fmt in p.quantizations + p.pruned_quantizations:
      names.check_format(fmt)
    assert p.eval_split in p.split_sizes and p.eval_size() > 0
    assert all(1 <= s <= 5 for s in p.severities)
    for corruption in p.corruptions or ():
      corruption_registry.check(corruption, 3)
    assert len(p.image_shape) == 3


def test_every_protocol_resolves_its_preset_and_schedules():
  # A data set whose preset lacks a one-shot or iterative schedule would fail at run time
  # (`--pruning=oneshot`); every training protocol resolves all three, named as the preset.
  for name, p in protocols.PROTOCOLS.items():
    assert presets.get(p.preset).name == presets.for_dataset(name) == p.preset
  for name, t in protocols.TRAININGS.items():
    if t.preset is not None:
      assert presets.get(name).dataset == t.dataset
    assert oneshot_schedule.get(name).name == name and oneshot_schedule.get(name).phases
    assert iterative_schedule.get(name).name == name
  assert set(presets.names()) == set(protocols.TRAININGS) - {"user"}


def test_spec_defaults():
  # docs/spec.md §2.3: CelebA dynamic_int8 + full_int8 only (004); the others 000's three.
  celeb_a = protocols.get("celeb_a")
  assert celeb_a.quantizations == ("dynamic_int8", "full_int8")
  assert "float16" in protocols.get("cifar10").quantizations
  # 004 evaluates no corruption on CelebA; the paper sets evaluate severities 1-5
  # (docs/spec.md §3.6).
  assert celeb_a.corruptions == ()
  assert protocols.get("imagenet2012").corruptions is None
  assert protocols.get("imagenet2012").severities == (1, 2, 3, 4, 5)
  # docs/spec.md §1.1: post-training formats of pruned members are opt-in.
  assert all(p.pruned_quantizations == () for p in protocols.PROTOCOLS.values())
  # docs/spec.md §1.5: 000's robustness tables average over 5 members.
  assert protocols.get("imagenet2012").robustness_members == 5
  assert protocols.get("digits").robustness_members is None
  assert presets.for_dataset("celeb_a") == "celeb_a_paper"
  assert presets.for_dataset("imagenet2012") == "imagenet_paper"
  assert presets.for_dataset("digits_biased") == "digits"
  assert presets.get(protocols.get("cifar10").preset).model == "wrn_28_10"


def test_noise_constants_match_the_artifact_module():
  assert schema.PAPER_EPS == noise_artifact.PAPER_EPS
  assert schema.PAPER_DRAWS == noise_artifact.PAPER_DRAWS
  assert schema.PAPER_EXAMPLES == noise_artifact.PAPER_EXAMPLES
  digits = protocols.get("digits")
  assert digits.noise_eps == noise_artifact.PAPER_EPS[::2] and digits.noise_draws == 10


@pytest.mark.parametrize("name", ["digits", "digits_biased"])
def test_split_sizes_and_shape_match_the_loader(name):
  dataset = registry.get(name)
  p = protocols.get(name)
  assert p.eval_split == dataset.spec.eval_split
  assert tuple(p.image_shape) == tuple(dataset.spec.image_shape)
  assert p.split_sizes == {s: dataset.num_examples(s) for s in dataset.spec.splits}


def test_tfds_shapes_and_splits_match_the_loaders():
  for name in ("celeb_a", "cifar10", "cifar100", "mnist", "fashion_mnist", "imagenet2012"):
    spec = registry.get(name).spec
    p = protocols.get(name)
    assert tuple(p.image_shape) == tuple(spec.image_shape), name
    assert set(p.split_sizes) == set(spec.splits) and p.eval_split == spec.eval_split, name


def test_unknown_data_set():
  with pytest.raises(protocols.ProtocolError, match="unknown data set 'nope': no protocol"):
    protocols.get("nope")
  with pytest.raises(presets.PresetError, match="'nope'"):
    presets.for_dataset("nope")
  with pytest.raises(dataset_api.DataError, match="unknown data set 'nope'"):
    trained_plan.protocol_of("nope")


def test_audit_defaults_resolve_from_the_protocol(tmp_path):
  default, seed = tree.Robustness(), 0
  assert trained_plan.corruption_splits(protocols.get("celeb_a"), default, False) == []
  assert trained_plan.noise_protocol(protocols.get("celeb_a"), tree.Noise(), seed) is None
  noise = trained_plan.noise_protocol(protocols.get("cifar10"), tree.Noise(), seed)
  assert noise.eps == noise_artifact.PAPER_EPS and noise.draws == 100
  splits = trained_plan.corruption_splits(protocols.get("digits"), default, False)
  assert len(splits) == len(corruption_registry.CORRUPTIONS) and splits[0].endswith("@3")
  assert trained_plan.corruption_splits(
    protocols.get("imagenet2012"), tree.Robustness(corruptions=("fog",)), False
  ) == [f"fog@{s}" for s in range(1, 6)]
  assert trained_plan.members_of(protocols.get("imagenet2012"), 30) == (0, 1, 2, 3, 4)
  assert trained_plan.members_of(protocols.get("imagenet2012"), 3) == (0, 1, 2)
  assert trained_plan.members_of(protocols.get("digits"), 7) == tuple(range(7))


def test_mixed_precision_is_recorded_only_when_on():
  preset = presets.get("tiny")
  assert not preset.mixed_precision and "mixed_precision" not in preset.to_json()
  assert presets.get("tiny", mixed_precision=True).to_json()["mixed_precision"] is True


def test_protocols_imports_only_the_standard_library():
  # Importing the registry imports every protocol module.
  code = (
    "import sys; from tf_forget.data.protocols import protocol_registry; "
    "bad = [m for m in ('numpy', 'tensorflow') if m in sys.modules]; "
    "assert not bad, bad"
  )
  subprocess.run([sys.executable, "-c", code], check=True)


def test_export_defaults_follow_the_members_data_set(tmp_path):
  member = tmp_path / "members" / "dense" / "0"
  member.mkdir(parents=True)
  (member / "metadata.json").write_text('{"dataset": "celeb_a"}')
  # docs/spec.md §2.3: no float16 on CelebA; docs/spec.md §1.1: pruned members in float32 only.
  assert default_formats.protocol_formats(str(tmp_path)) == (
    "float32,dynamic_int8,full_int8",
    "float32",
  )
  (tmp_path / "run.json").write_text('{"dataset": "cifar10"}')
  assert default_formats.protocol_formats(str(tmp_path))[0] == (
    "float32,float16,dynamic_int8,full_int8"
  )
  with pytest.raises(Exception, match="no run.json and no member"):
    default_formats.protocol_formats(str(tmp_path / "members"))
