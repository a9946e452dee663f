"""The plan's steps (tf_forget/pipeline/plan_steps.py): every registry is sound, a step receives
only what it declares, and adding a check is one function and one entry (docs/architecture.md,
"A plan check")."""

import dataclasses

import pytest

from tf_forget.config import tree
from tf_forget.pipeline import audit_plan
from tf_forget.pipeline import plan_steps
from tf_forget.pipeline import run_checks
from tf_forget.pipeline import trained_plan
from tf_forget.pipeline import user_plan

Step = plan_steps.Step


@pytest.mark.parametrize(
  "steps,given",
  [
    (trained_plan.STEPS, ("check_data",)),
    (user_plan.STEPS, ("check_data",)),
    (run_checks.STEPS, ("planned",)),
  ],
)
def test_every_registry_is_sound(steps, given):
  assert plan_steps.check(steps, given) == []
  sections = {f.name for f in dataclasses.fields(tree.AuditConfig)}
  for step in steps:
    assert set(step.reads) <= sections, step.name


@pytest.mark.parametrize("steps", [trained_plan.STEPS, user_plan.STEPS])
def test_every_plan_field_without_a_default_is_made(steps):
  made = {name for step in steps for name in step.makes}
  required = {
    f.name
    for f in dataclasses.fields(audit_plan.Plan)
    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
  }
  assert required <= made


def _a(x):
  return {"a": x}


def _b(a, data):
  del a, data
  return {"b": 1}


def test_check_names_each_problem():
  steps = (
    Step(_b, reads=("data",), needs=("a",), makes=("b",)),  # needs a before it is made
    Step(_a, needs=("x",), makes=("a",)),
    Step(_a, reads=("out",), makes=("a",)),  # takes x, reads out; a made twice
    Step(_b, reads=("data",), needs=("a", "data"), makes=("b",)),
  )
  assert plan_steps.check(steps, given=("x",)) == [
    "b: needs ['a'], which no earlier step makes",
    "a: takes ['x'], declares ['out']",
    "a: makes ['a'], made before",
    "b: reads and needs ['data']",
    "b: needs ['data'], which no earlier step makes",
    "b: makes ['b'], made before",
  ]


def test_run_hands_a_step_only_what_it_declares():
  seen = {}

  def record(gates, data, a):
    seen.update(gates=gates, data=data, a=a)
    return {"c": 3}

  config = tree.AuditConfig(out="/tmp/x", data=tree.Data(dataset="digits"))
  made = plan_steps.run(
    (
      Step(_a, needs=("x",), makes=("a",)),
      Step(record, reads=("gates", "data"), needs=("a",), makes=("c",)),
    ),
    config,
    x=7,
  )
  assert made == {"x": 7, "a": 7, "c": 3}
  assert seen == {"gates": config.gates, "data": config.data, "a": 7}


def test_run_refuses_a_step_that_makes_what_it_does_not_declare():
  with pytest.raises(ValueError, match=r"plan step a made \['a'\], declares \['b'\]"):
    plan_steps.run((Step(_a, needs=("x",), makes=("b",)),), tree.AuditConfig(), x=1)


def _at_most_five_members(population):
  """The check the recipe adds: refuses a population of more than 5 members."""
  if population.members is not None and population.members > 5:
    raise tree.AuditError(f"--members={population.members}: at most 5 here")


def _config(tmp_path, **population):
  return tree.AuditConfig(
    out=str(tmp_path / "out"),
    data=tree.Data(dataset="digits"),
    population=tree.Population(**population),
    formats=tree.Formats(quantizations=("bogus_format",)),
  )


def test_an_added_check_refuses_in_its_place(monkeypatch, tmp_path):
  """The recipe: one function, one `Step` inserted where its refusal belongs. Before `formats`
  it refuses first; after it, the unknown format is the first problem named."""
  config = _config(tmp_path, members=6)
  with pytest.raises(Exception, match="bogus_format"):
    audit_plan.plan(config, check_data=False)
  registered = trained_plan.STEPS
  at = [s.name for s in registered].index("formats")
  check = Step(_at_most_five_members, reads=("population",))
  for where, expected in ((at, "--members=6: at most 5 here"), (at + 1, "bogus_format")):
    steps = registered[:where] + (check,) + registered[where:]
    assert plan_steps.check(steps, ("check_data",)) == []
    monkeypatch.setattr(trained_plan, "STEPS", steps)
    with pytest.raises(Exception, match=expected):
      audit_plan.plan(config, check_data=False)
  monkeypatch.setattr(trained_plan, "STEPS", registered[:at] + (check,) + registered[at:])
  with pytest.raises(tree.AuditError, match="--members=6"):
    audit_plan.plan(dataclasses.replace(config, formats=tree.Formats()), check_data=False)
  p = audit_plan.plan(
    dataclasses.replace(config, formats=tree.Formats(), population=tree.Population(members=5)),
    check_data=False,
  )
  assert p.population.members == 5
