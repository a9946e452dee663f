"""The audit's plan is made by steps, as its work is done by stages.

A `Step` is one check, or one value of the plan, made from the sections of the configuration it
`reads` (attributes of `tf_forget.config.tree.AuditConfig`: `data`, `user`, `gates`, ...) and
the values earlier steps made that it `needs`; it returns the values it `makes` (a dict with
exactly those keys, or None when it makes none). A step never receives the whole configuration:
`run` hands it the pieces it declared, by name, as keyword arguments.

The steps of an audit are a plain tuple, run in order, so the order of the one-line refusals
is the tuple's: `tf_forget.pipeline.trained_plan.STEPS` (a population tf_forget trains) and
`tf_forget.pipeline.user_plan.STEPS` (the user's own files), each ending with the
shared `tf_forget.pipeline.gate_plan.STEP` and `tf_forget.pipeline.repair_plan.STEP`.
`tf_forget.pipeline.audit_plan.plan` runs them and builds the `Plan` from what they made.

Add a check: write a function whose parameters are the sections it reads and the values it
needs, and insert a `Step` at the place where its refusal belongs; `check` (run by the tests)
proves that every value a step needs is made before it, that no value is made twice, and that
each function's parameters are what its step declares.
"""

import dataclasses
import inspect
from typing import Callable, Optional


@dataclasses.dataclass(frozen=True)
class Step:
  """One check or value of the plan.

  Attributes:
    resolve: callable(**reads, **needs) -> {name: value for name in makes}, or None.
    reads: the configuration's sections it receives (`AuditConfig` attribute names).
    needs: the values made by earlier steps (or given to `run`) it receives.
    makes: the names of the values it returns.
  """

  resolve: Callable[..., Optional[dict]]
  reads: tuple = ()
  needs: tuple = ()
  makes: tuple = ()

  @property
  def name(self):
    return self.resolve.__name__.lstrip("_")


def check(steps, given=()):
  """The problems of a tuple of steps (a list of lines; [] when sound).

  Args:
    steps: the `Step`s, in the order `run` runs them.
    given: the names `run` is given besides the configuration (`check_data`).
  """
  problems, made = [], set(given)
  for step in steps:
    params = set(inspect.signature(step.resolve).parameters)
    declared = set(step.reads) | set(step.needs)
    if params != declared:
      problems.append(f"{step.name}: takes {sorted(params)}, declares {sorted(declared)}")
    if set(step.reads) & set(step.needs):
      problems.append(f"{step.name}: reads and needs {sorted(set(step.reads) & set(step.needs))}")
    missing = [n for n in step.needs if n not in made]
    if missing:
      problems.append(f"{step.name}: needs {missing}, which no earlier step makes")
    twice = [n for n in step.makes if n in made]
    if twice:
      problems.append(f"{step.name}: makes {twice}, made before")
    made |= set(step.makes)
  return problems


def run(steps, config, **given):
  """Runs `steps` in order over `config`; returns every value made (and `given`), a dict.

  Raises:
    The first step's refusal (an `errors.Error` subclass, one line); ValueError if a step
    returns other values than it declares (a programming error).
  """
  made = dict(given)
  for step in steps:
    kwargs = {name: getattr(config, name) for name in step.reads}
    kwargs.update((name, made[name]) for name in step.needs)
    found = step.resolve(**kwargs) or {}
    if set(found) != set(step.makes):
      raise ValueError(f"plan step {step.name} made {sorted(found)}, declares {sorted(step.makes)}")
    made.update(found)
  return made
