"""The report is made of units: each part of the report is one `Unit`, run in the order of a tuple.

A unit declares what it `reads` — the report's `INPUTS` (the run, its directory, the audit's
configuration, the report's options, the settings and notes made so far) and the tables and
values that earlier units make —, what it `makes` (tables: report.json's `tables` and
`tables/<name>.csv`) and what it `gives` (other values later units and sections read: the
per-variant summary, the Taxicab ranking, the recommendation, ...). Its `compute` receives
exactly its reads, by keyword, and returns a `Part`: its tables, notes and settings (merged, in
the tuple's order, into report.json's `tables`, `notes` and `settings`) and the values it gives.

A unit shows zero or more `Section`s of the page: an id (the page anchor), a title, the short
name in the table of contents, the tables and values its `render` reads (by keyword, any unit's)
and the designs it serves (`POPULATION`: K >= 2 populations, `K1`: one network). `render`
returns the section's inner HTML, or `Skip(reason)` when there is nothing to show: an optional
section is then left out of the page, another one shows the reason (with one network it is
folded into one line before the page's last section, with the sections that compare
populations).

`check` proves a tuple of units sound, as `tf_forget.pipeline.plan_steps.check` proves the
plan's steps: every read an input or made by an earlier unit, every section's read made by some
unit, nothing made twice, names and section ids unique, every function's parameters what its
unit or section declares, and the page order naming every section once.
"""

import collections.abc
import dataclasses
import inspect
import types
from typing import Callable, Dict, List, Optional, Tuple

from tf_forget.report import html

# What every unit may read besides what earlier units make: the `collect.Run`; its run
# directory; the run's configuration (`AuditConfig.to_json`, {} if none); the report's options
# (`gallery_size`, `human_study` and `measures`, the keyword arguments of the core measures);
# the report's settings and notes so far (read-only; every unit's when a section renders).
INPUTS = ("run", "run_dir", "config", "options", "settings", "notes")
POPULATION = "population"  # a design: K >= 2 independently trained networks per population
K1 = "k1"  # a design: one network against its own compressed files (`single_network`)
DESIGNS = (POPULATION, K1)


@dataclasses.dataclass(frozen=True)
class Skip:
  """A section with nothing to show, and why (one clause, no final period)."""

  reason: str

  @classmethod
  def of(cls, reasons):
    """The `Skip` of several reasons ("not applicable to this run" when there is none)."""
    return cls("; ".join(reasons) if reasons else "not applicable to this run")

  def html(self):
    """The line a shown section says instead: "Not shown: <reason>."."""
    return html.skipped([self.reason])


@dataclasses.dataclass
class Part:
  """What one unit adds to the report: its tables, notes and settings, and the values it gives
  (`Unit.gives`). A notes key that is present is added to the report's notes even with no
  note."""

  tables: dict = dataclasses.field(default_factory=dict)
  notes: dict = dataclasses.field(default_factory=dict)
  settings: dict = dataclasses.field(default_factory=dict)
  gives: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Section:
  """One section of the page (see the module docstring).

  Attributes:
    id: the page anchor, unique on the page.
    title: the heading.
    nav: the short name in the sticky table of contents.
    reads: the inputs, tables and values `render` takes, by keyword.
    render: callable(**reads) -> inner HTML (str) or `Skip`.
    designs: the designs it serves (`DESIGNS`); left out for the others.
    optional: left out of the page (and its navigation) when it renders a `Skip`.
  """

  id: str
  title: str
  nav: str
  reads: Tuple[str, ...]
  render: Callable[..., object]
  designs: Tuple[str, ...] = DESIGNS
  optional: bool = False


@dataclasses.dataclass(frozen=True)
class Unit:
  """One part of the report (see the module docstring).

  Attributes:
    name: unique among the units.
    reads: the `INPUTS`, tables and values of earlier units its `compute` takes, by keyword.
    makes: the tables it may make (a run may leave some out).
    gives: the other values it may give.
    compute: callable(**reads) -> `Part`, or None for a unit that only shows sections.
    sections: the `Section`s it shows.
  """

  name: str
  reads: Tuple[str, ...] = ()
  makes: Tuple[str, ...] = ()
  gives: Tuple[str, ...] = ()
  compute: Optional[Callable[..., Part]] = None
  sections: Tuple[Section, ...] = ()


class UndeclaredRead(ValueError):
  """A name read from a `Reads` mapping that its unit did not declare (a programming error)."""


class Reads(collections.abc.Mapping):
  """A read-only mapping of the tables (or values) a unit declared it reads.

  A declared name that no unit made in this run is absent (`get` returns None); any other name
  raises `UndeclaredRead`, even through `get` or `in`, so a view never silently reads nothing.
  """

  def __init__(self, declared, values):
    self._declared = tuple(declared)
    self._values = {n: values[n] for n in self._declared if values.get(n) is not None}

  def __getitem__(self, name):
    if name not in self._declared:
      raise UndeclaredRead(f"read of {name!r}, which is not declared ({list(self._declared)})")
    return self._values[name]

  def __iter__(self):
    return iter(self._values)

  def __len__(self):
    return len(self._values)


@dataclasses.dataclass
class Measures:
  """The report's numbers: what every unit made, merged in the units' order.

  Attributes:
    tables: name -> DataFrame (one CSV each; docs/artifacts/report.md).
    notes: key -> list of one-line notes (what was skipped and why).
    config: the settings (report.json's `settings`).
    values: name -> value given by a unit (`Unit.gives`).
  """

  tables: collections.abc.Mapping
  notes: Dict[str, List[str]]
  config: dict
  values: collections.abc.Mapping = dataclasses.field(default_factory=dict)

  @property
  def variants(self):
    """variant -> per-variant summary dict (JSON-ready), the `variants` value."""
    return self.values.get("variants") or {}

  @property
  def cie(self):
    """compressed variant -> its Taxicab ranking dict, the `cie` value."""
    return self.values.get("cie") or {}

  @property
  def study(self):
    """The `recall_study.Study` of the one-shot variants, or None: the `study` value."""
    return self.values.get("study")


def _parameters(fn):
  return set(inspect.signature(fn).parameters)


def check(units, page=()):
  """The problems of a tuple of units (a list of lines; [] when sound).

  Args:
    units: the `Unit`s, in the order `compute` runs them.
    page: the section ids in page order (every section of the units once; () skips this).
  """
  problems, made, names, ids = [], set(INPUTS), set(), []
  everything = set(INPUTS) | {n for u in units for n in u.makes + u.gives}
  for unit in units:
    if unit.name in names:
      problems.append(f"{unit.name}: a unit of that name comes before")
    names.add(unit.name)
    missing = [n for n in unit.reads if n not in made]
    if missing:
      problems.append(f"{unit.name}: reads {missing}, which no earlier unit makes")
    if unit.compute is None:
      if unit.reads or unit.makes or unit.gives:
        problems.append(f"{unit.name}: declares reads / makes / gives but has no compute")
    elif _parameters(unit.compute) != set(unit.reads):
      problems.append(
        f"{unit.name}: compute takes {sorted(_parameters(unit.compute))}, "
        f"declares {sorted(unit.reads)}"
      )
    twice = [n for n in unit.makes + unit.gives if n in made]
    if twice:
      problems.append(f"{unit.name}: makes {twice}, made before (or an input)")
    made |= set(unit.makes) | set(unit.gives)
    for section in unit.sections:
      ids.append(section.id)
      where = f"{unit.name}: section {section.id!r}"
      unknown = [n for n in section.reads if n not in everything]
      if unknown:
        problems.append(f"{where} reads {unknown}, which no unit makes")
      if not callable(section.render):
        problems.append(f"{where} has no render")
      elif _parameters(section.render) != set(section.reads):
        problems.append(
          f"{where}: render takes {sorted(_parameters(section.render))}, "
          f"declares {sorted(section.reads)}"
        )
      if not section.designs or set(section.designs) - set(DESIGNS):
        problems.append(f"{where} serves {list(section.designs)}, not some of {list(DESIGNS)}")
  repeated = sorted({i for i in ids if ids.count(i) > 1})
  if repeated:
    problems.append(f"sections {repeated} are shown by more than one unit")
  if page and (sorted(page) != sorted(set(ids)) or len(page) != len(set(page))):
    problems.append(f"the page order {list(page)} does not name each section {sorted(ids)} once")
  return problems


def refuse(units, page=()):
  """Raises ValueError naming the first problem of `check` (a bug in the registry)."""
  problems = check(units, page)
  if problems:
    raise ValueError(f"report units: {problems[0]}")


def _merge_notes(notes, part_notes):
  for key, values in part_notes.items():
    notes.setdefault(key, []).extend(values)


def compute(units, **inputs):
  """Runs `units` in order; each receives its reads and adds its `Part`.

  Args:
    units: `Unit`s (sound: `check`).
    **inputs: the `INPUTS` but `settings` and `notes` (those the units make).

  Returns:
    `Measures`.

  Raises:
    ValueError: a unit that makes or gives what it does not declare (a programming error).
  """
  tables, notes, settings, values = {}, {}, {}, {}
  for unit in units:
    if unit.compute is None:
      continue
    known = dict(
      inputs,
      settings=types.MappingProxyType(dict(settings)),
      notes=types.MappingProxyType({k: list(v) for k, v in notes.items()}),
    )
    part = unit.compute(**{n: known[n] if n in known else values.get(n) for n in unit.reads})
    extra = sorted(set(part.tables) - set(unit.makes)) + sorted(set(part.gives) - set(unit.gives))
    if extra:
      raise ValueError(f"report unit {unit.name} made {extra}, which it does not declare")
    tables.update(part.tables)
    values.update(part.tables)
    values.update(part.gives)
    _merge_notes(notes, part.notes)
    settings.update(part.settings)
  return Measures(tables=tables, notes=notes, config=settings, values=values)


def _left_out_line(folded):
  """The one line that names the sections one network's report leaves out, and why.

  Args:
    folded: [(section, reason)]: a section that compares populations (reason None) or one with
      nothing to show.
  """
  population = [s.nav for s, reason in folded if reason is None]
  empty = [f"{s.nav} ({reason})" for s, reason in folded if reason is not None]
  parts = []
  if population:
    parts.append(
      f"{', '.join(population)}: these compare populations of K ≥ 2 independently "
      "trained networks (means, Welch tests and intervals over members, modal "
      "labels); with one network, section 1b answers the same questions over the "
      "test examples (paired), and the verdict reads it"
    )
  if empty:
    parts.append("not measured in this run: " + "; ".join(empty))
  return f"<p class=\"lead\">{html.esc('. '.join(parts))}.</p>"


LEFT_OUT = Section(
  "left-out",
  "Left out for one network (K = 1)",
  "Left out",
  (),
  lambda: Skip("nothing left out"),
  optional=True,
)


def render(units, page, measures, design, **inputs):
  """[(section, inner HTML)] of the page, in `page` order.

  A section that does not serve `design` is left out; an optional section that renders a `Skip`
  too. With one network (`K1`) a section with nothing to show (but the page's last) is left out
  as well, and one line before the last section (`LEFT_OUT`) names what was left out and why.

  Args:
    units: `Unit`s.
    page: their section ids in page order.
    measures: `Measures` (`compute`).
    design: `POPULATION` or `K1`.
    **inputs: the `INPUTS` but `settings` and `notes`.

  Raises:
    ValueError: a section that rendered neither HTML nor a `Skip` (a bug in its render).
  """
  sections = {s.id: s for u in units for s in u.sections}
  known = dict(
    inputs,
    settings=types.MappingProxyType(dict(measures.config)),
    notes=types.MappingProxyType(dict(measures.notes)),
  )
  out, folded = [], []
  for i, sid in enumerate(page):
    section, last = sections[sid], i == len(page) - 1
    if design not in section.designs:
      folded.append((section, None))
      continue
    shown = section.render(
      **{n: known[n] if n in known else measures.values.get(n) for n in section.reads}
    )
    if not isinstance(shown, (str, Skip)):
      raise ValueError(f"report section {sid!r} rendered {type(shown).__name__}")
    if isinstance(shown, Skip) and (section.optional or (design == K1 and not last)):
      if not section.optional:
        folded.append((section, shown.reason.rstrip(".")))
      continue
    if last and folded:
      out.append((LEFT_OUT, _left_out_line(folded)))
    out.append((section, shown.html() if isinstance(shown, Skip) else shown))
  return out
