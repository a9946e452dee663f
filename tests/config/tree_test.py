"""The audit's one configuration: exact JSON round trip, validation, overrides.

The round trip is checked over configurations generated from the tree's own type hints (every
section, every optional field set or not, random values of each field's type), so a field
added to the tree is covered without touching this test.
"""

import dataclasses
import json
import random
import typing

import pytest

from tf_forget.artifacts import audit_json
from tf_forget.config import codec
from tf_forget.config import tree


def _value(kind, rng, depth=0):
  """A random value of the type `kind` (a field's type hint)."""
  origin, args = typing.get_origin(kind), typing.get_args(kind)
  if origin is typing.Union:
    inner = [a for a in args if a is not type(None)][0]
    return None if rng.random() < 0.3 else _value(inner, rng, depth)
  if dataclasses.is_dataclass(kind):
    return _config(kind, rng, depth + 1)
  if (
    origin is tuple
    and len(args) == 2
    and args[1] is Ellipsis
    or origin in (typing.Sequence.__origin__,)
  ):
    return tuple(_value(args[0], rng, depth) for _ in range(rng.randrange(3)))
  if origin is tuple:
    return tuple(_value(a, rng, depth) for a in args)
  if origin is not None and "Mapping" in str(origin):
    return {f"k{i}": rng.choice([1, 2.5, "x", True, None, [1, 2]]) for i in range(rng.randrange(3))}
  if kind is bool:
    return rng.random() < 0.5
  if kind is int:
    return rng.randrange(-5, 100)
  if kind is float:
    return rng.choice([0.0, 1.5, -2.25, 1e-9, 3.0])
  if kind is str:
    return rng.choice(["", "digits", "a/b", "ünï", "x y"])
  if kind is object:
    return rng.choice([1, "x", None, [1, "y"], {"a": 1}])
  raise AssertionError(f"no generator for {kind}")


def _config(cls, rng, depth=0):
  hints = typing.get_type_hints(cls)
  values = {}
  for f in dataclasses.fields(cls):
    if cls is tree.AuditConfig or rng.random() < 0.7:
      values[f.name] = _value(hints[f.name], rng, depth)
  if cls.__name__ == "Gates":  # a gate is a bound >= 0 (`gates.Gates` refuses others)
    values = {k: abs(v) if isinstance(v, (int, float)) else v for k, v in values.items()}
  if cls is tree.UserModels:
    values.setdefault("references", ("m.keras",))
  return cls(**values)


@pytest.mark.parametrize("seed", range(200))
def test_generated_configurations_round_trip_exactly_through_json(seed):
  config = _config(tree.AuditConfig, random.Random(seed))
  doc = json.loads(json.dumps(config.to_json()))  # through JSON text, as a file holds it
  again = tree.AuditConfig.from_json(doc)
  assert again == config
  assert again.to_json() == doc


def test_default_configuration_is_valid_and_its_json_names_every_section():
  config = tree.AuditConfig(out="runs/x")
  assert config.validate() == ()
  assert list(config.to_json()) == [f.name for f in dataclasses.fields(tree.AuditConfig)]
  assert tree.AuditConfig.from_json({"out": "runs/x"}) == config  # missing: the defaults


@pytest.mark.parametrize(
  "doc,message",
  [
    ({"nosuch": 1}, "unknown configuration field nosuch"),
    ({"noise": {"draw": 5}}, "unknown configuration field noise.draw"),
    ({"population": {"members": "3"}}, "population.members must be int, got '3'"),
    ({"population": {"members": True}}, "population.members must be int, got True"),
    ({"noise": {"levels": 0.1}}, "noise.levels must be a list, got 0.1"),
    ({"gates": {"max_kl": float("nan")}}, "gates.max_kl must be a finite number, got nan"),
    ({"user": {"compress": ["float16"]}}, "user is incomplete"),
    ({"data": []}, "data must be a dict"),
  ],
)
def test_a_bad_json_configuration_is_one_line_naming_the_field(doc, message):
  with pytest.raises(codec.ConfigError) as e:
    tree.AuditConfig.from_json(doc)
  assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(
  "path,value,problem",
  [
    ("population.members", 1, "population.members must be an integer >= 2, got 1"),
    ("population.population_seed", -1, "population.population_seed must be an integer >= 0"),
    ("pruning.iterative.alpha", 1.0, "pruning.iterative.alpha must be in (0, 1), got 1.0"),
    ("pruning.iterative.methods", ("wt", "xx"), "pruning.iterative.methods must be one of wt"),
    ("pruning.oneshot.ratio_over", "some", "pruning.oneshot.ratio_over must be one of prunable"),
    ("robustness.source", "both", "robustness.source must be one of generated, published"),
    ("robustness.severities", (0, 3), "robustness.severities must be integers 1-5"),
    ("noise.levels", (0.2, 0.1), "noise.levels must be ascending numbers >= 0"),
    ("deployment.encoding", "zip", "deployment.encoding must be one of auto, plain, sparse"),
    ("deployment.num_threads", 0, "deployment.num_threads must be in 1-64, got 0"),
    ("execution.executor", "spark", "execution.executor must be one of inline, local, ray"),
    ("execution.ray_address", "auto", "execution.ray_address needs execution.executor ray"),
    ("repair.repairs", ("float0",), "repair.repairs must be repairs (float<N>"),
    ("repair.max_size", 0.5, "repair.max_size must be a number >= 1.0, got 0.5"),
    ("data.image_size", (8,), "data.image_size must be two positive integers H,W"),
    ("data.max_image_pixels", 0, "data.max_image_pixels must be an integer >= 1"),
  ],
)
def test_validate_names_each_problem_in_one_line(path, value, problem):
  config = tree.with_overrides(tree.AuditConfig(out="x"), {path: value})
  problems = config.validate()
  assert len(problems) == 1 and problems[0].startswith(problem), problems


def test_user_models_with_training_fields_are_refused():
  config = tree.AuditConfig(
    out="x", user=tree.UserModels(references=("m.keras",)), population=tree.Population(members=3)
  )
  assert config.validate()[0].startswith("population.members describes a population")


def test_with_overrides_replaces_fields_and_starts_an_optional_section():
  config = tree.with_overrides(
    tree.AuditConfig(out="x"),
    {"noise.draws": 5, "user.references": ["a.keras"], "gates.max_kl": 0.1},
  )
  assert config.noise.draws == 5 and config.gates.max_kl == 0.1
  assert config.user == tree.UserModels(references=("a.keras",))
  with pytest.raises(codec.ConfigError, match="unknown configuration field noise.nope.x"):
    tree.with_overrides(config, {"noise.nope.x": 1})


def test_a_saved_configuration_loads_back_and_other_files_are_refused(tmp_path):
  config = tree.AuditConfig(out=str(tmp_path / "run"), noise=tree.Noise(levels=(0.0, 0.1)))
  tree.save(config, str(tmp_path / "c.json"))
  assert tree.load(str(tmp_path / "c.json")) == config
  (tmp_path / "old.json").write_text(json.dumps({"schema": audit_json.SCHEMA, "config": {}}))
  with pytest.raises(tree.AuditError, match="records no whole configuration"):
    tree.load(str(tmp_path / "old.json"))
  (tmp_path / "other.json").write_text("{}")
  with pytest.raises(tree.AuditError, match="is neither a tf_forget.config/1 nor"):
    tree.load(str(tmp_path / "other.json"))
  with pytest.raises(tree.AuditError, match="cannot read"):
    tree.load(str(tmp_path / "missing.json"))
