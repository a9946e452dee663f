"""Adding a data set (docs/architecture.md, "A data set"): one protocol module, one registry
entry, its builder; and what the protocol registry refuses to register."""

import dataclasses
import types

import pytest

from tf_forget.config import tree
from tf_forget.data import digits
from tf_forget.data import registry as data_registry
from tf_forget.data.protocols import protocol_registry as protocols
from tf_forget.data.protocols import schema
from tf_forget.pipeline import audit_plan
from tf_forget.prune import iterative_schedule
from tf_forget.prune import oneshot_schedule
from tf_forget.train import presets

NEW = "digits_copy"


def _module(name=NEW, **training_fields):
  """A protocol module declaring data set `name` as a copy of `digits`, with its own preset."""
  training = dataclasses.replace(
    protocols.TRAININGS["digits"], name=name, dataset=name, **training_fields
  )
  protocol = dataclasses.replace(protocols.get("digits"), dataset=name, preset=name)
  return types.SimpleNamespace(PROTOCOLS=(protocol,), TRAININGS=(training,))


@pytest.fixture(name="registries")
def _registries(monkeypatch):
  """The protocol and data registries as copies, restored after the test."""
  monkeypatch.setattr(protocols, "PROTOCOLS", dict(protocols.PROTOCOLS))
  monkeypatch.setattr(protocols, "TRAININGS", dict(protocols.TRAININGS))
  monkeypatch.setattr(data_registry, "DATASETS", dict(data_registry.DATASETS))


def test_a_registered_data_set_resolves_everywhere(registries, tmp_path):
  del registries
  protocols.register(_module())  # what `protocols.MODULES` gets at import
  data_registry.DATASETS[NEW] = digits.Digits
  assert protocols.get(NEW).preset == presets.for_dataset(NEW) == NEW
  assert presets.get(NEW).to_json() == dict(presets.get("digits").to_json(), name=NEW, dataset=NEW)
  assert oneshot_schedule.get(NEW) == dataclasses.replace(oneshot_schedule.get("digits"), name=NEW)
  assert iterative_schedule.get(NEW) == dataclasses.replace(
    iterative_schedule.get("digits"), name=NEW
  )
  out = str(tmp_path / "out")
  p = audit_plan.plan(tree.AuditConfig(out=out, data=tree.Data(dataset=NEW)), check_data=False)
  assert (p.population.dataset, p.population.preset.name) == (NEW, NEW)
  assert p.quantizations == protocols.get("digits").quantizations
  assert p.noise.eps == tuple(protocols.get("digits").noise_eps)
  p = audit_plan.plan(
    tree.AuditConfig(
      out=out,
      data=tree.Data(dataset=NEW),
      pruning=tree.Pruning(oneshot=tree.Oneshot(variants=("oneshot_mp_r2",))),
    ),
    check_data=False,
  )
  assert p.oneshot == ("oneshot_mp_r2",) and p.oneshot_schedule == oneshot_schedule.get(NEW)
  p = audit_plan.plan(
    tree.AuditConfig(
      out=out,
      data=tree.Data(dataset=NEW),
      pruning=tree.Pruning(iterative=tree.Iterative(methods=("wt",))),
    ),
    check_data=False,
  )
  assert p.iterative_schedule == iterative_schedule.get(NEW) and len(p.iterative) == 6


def test_the_registries_are_restored(registries):
  del registries
  assert NEW not in protocols.PROTOCOLS and NEW not in protocols.TRAININGS
  assert NEW not in data_registry.DATASETS


def test_a_protocol_needs_its_builder_to_be_audited(registries, tmp_path):
  del registries
  protocols.register(_module())
  with pytest.raises(Exception, match=f"unknown data set '{NEW}'"):
    audit_plan.plan(
      tree.AuditConfig(out=str(tmp_path), data=tree.Data(dataset=NEW)), check_data=False
    )


@pytest.mark.parametrize(
  "module, message",
  [
    (_module(oneshot={}), "has no one-shot schedule"),
    (_module(oneshot={"batch_size": 64}), "has no one-shot schedule"),
    (_module(iterative={"alpha": 0.5}), "iterative needs exactly alpha, cycles, warmup_epochs"),
    (_module(name="digits"), "'digits' is declared twice"),
    (
      types.SimpleNamespace(
        TRAININGS=(),
        PROTOCOLS=(dataclasses.replace(protocols.get("digits"), dataset=NEW, preset="nope"),),
      ),
      "its preset 'nope' is not a registered training protocol",
    ),
    (
      types.SimpleNamespace(
        TRAININGS=(),
        PROTOCOLS=(dataclasses.replace(protocols.get("digits"), dataset=NEW, preset="user"),),
      ),
      "its preset 'user' is not a registered training protocol",
    ),
    (
      types.SimpleNamespace(TRAININGS=(), PROTOCOLS=(protocols.get("mnist"),)),
      "'mnist' has two protocols",
    ),
    (
      types.SimpleNamespace(
        TRAININGS=(),
        PROTOCOLS=(
          dataclasses.replace(protocols.get("digits"), dataset=NEW, eval_split="validation"),
        ),
      ),
      "no size for its eval split 'validation'",
    ),
  ],
)
def test_what_cannot_be_registered(registries, module, message):
  del registries
  before = (dict(protocols.PROTOCOLS), dict(protocols.TRAININGS))
  with pytest.raises(protocols.ProtocolError, match=message):
    protocols.register(module)
  assert (protocols.PROTOCOLS, protocols.TRAININGS) == before  # all or nothing


def test_a_training_protocol_cannot_be_declared_without_a_one_shot_schedule():
  with pytest.raises(TypeError, match="oneshot"):
    schema.TrainingProtocol(name=NEW, dataset=NEW, preset={})
