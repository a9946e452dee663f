"""The report's sections, in page order: one registry gives the order, the navigation and the HTML.

Each `Section` names its id (the page anchor), its title, its short name in the sticky table of
contents, and the function that renders its inner HTML from a `View` (the report's measures,
gallery and recommendation). An optional section renders None when its measure does not apply
to the run, and is then left out of the page and the navigation; every other section is always
shown (it says why when its measure does not apply). Adding a section is one entry here and
its render function (in `sections` or a study's own view module).
"""

import dataclasses
import html as html_lib
from typing import Callable, Mapping, Optional, Sequence

from tf_forget.report import divergence_view
from tf_forget.report import html
from tf_forget.report import human_study_view
from tf_forget.report import prune_retrain_plots
from tf_forget.report import published_report
from tf_forget.report import recall_study_view
from tf_forget.report import repair_view
from tf_forget.report import sections
from tf_forget.report import single_network_view
from tf_forget.report import verdict_view


@dataclasses.dataclass(frozen=True)
class View:
  """What the sections render from.

  Attributes:
    measures: the `measures.Measures`.
    gallery: family -> gallery cards with `png` (`gallery.build_families`).
    protected: protected attribute names (shown on every gallery card).
    extra_notes: more lines for the notes section.
    recommendation: `verdict.recommend`'s dict (the verdict block's first line).
    divergence_images: example id -> PNG thumbnail of the largest-KL examples
      (`divergence_report.thumbnails`).
  """

  measures: object
  gallery: Mapping = dataclasses.field(default_factory=dict)
  protected: Sequence[str] = ()
  extra_notes: Sequence[str] = ()
  recommendation: Optional[dict] = None
  divergence_images: Mapping = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Section:
  """One section of the page (see the module docstring)."""

  id: str
  title: str
  nav: str
  render: Callable[[View], Optional[str]]
  optional: bool = False
  population: bool = False  # compares populations (K >= 2): left out with K = 1


SECTIONS = (
  Section(
    "verdict",
    "Verdict: which file to ship, and what it costs",
    "Verdict",
    lambda v: verdict_view.section(v.measures, v.recommendation),
  ),
  Section("glossary", "How to read this report", "Terms", lambda v: verdict_view.glossary()),
  Section(
    "overview", "Overview", "Overview", lambda v: sections.overview(v.measures), population=True
  ),
  Section(
    "topline",
    "1. Top-line accuracy: the \"nothing changed\" view",
    "1 Top-1",
    lambda v: sections.topline(v.measures),
    population=True,
  ),
  Section(
    "k1",
    "1b. One network, its compressed files: flips and paired tests (K = 1)",
    "1b K = 1",
    lambda v: single_network_view.section(v.measures),
    optional=True,
  ),
  Section(
    "divergence",
    "1c. Output divergence: how far each file's outputs moved (KL, Δp)",
    "1c Divergence",
    lambda v: divergence_view.section(v.measures),
  ),
  Section(
    "why",
    "1d. Why a full int8 file forgot: per-layer error, and its repair",
    "1d Why",
    lambda v: repair_view.section(v.measures),
    optional=True,
  ),
  Section(
    "class-level",
    "2. Class level: which classes changed (000 Figure 2)",
    "2 Classes",
    lambda v: sections.class_level(v.measures),
    population=True,
  ),
  Section(
    "pie",
    "3. Pruning / compression identified exemplars (PIE)",
    "3 PIE",
    lambda v: sections.pie(v.measures),
    population=True,
  ),
  Section(
    "human-study",
    "3b. Human study: what the PIEs (CIEs) are (000 Table 7, Figure 5)",
    "3b Human study",
    lambda v: human_study_view.section(v.measures),
    optional=True,
  ),
  Section(
    "subgroups",
    "4. Subgroups: error, FPR, FNR (004 Tables 3-5)",
    "4 Subgroups",
    lambda v: sections.subgroups(v.measures),
    population=True,
  ),
  Section(
    "over-indexing",
    "5. Attribute over-indexing among CIEs (004 Figure 2)",
    "5 Over-indexing",
    lambda v: sections.over_indexing(v.measures),
    population=True,
  ),
  Section(
    "robustness",
    "6. Robustness to corruptions (000 Table 3)",
    "6 Robustness",
    lambda v: sections.robustness(v.measures),
  ),
  Section(
    "published",
    "6b. Published test sets: ImageNet-A (000 Table 8), CIFAR-10.1",
    "6b Published sets",
    lambda v: published_report.section(v.measures),
    optional=True,
  ),
  Section(
    "noise",
    "7. l-inf noise: accuracy, prune potential, similarity (003 §4.1, §5)",
    "7 Noise",
    lambda v: sections.noise(v.measures),
  ),
  Section(
    "recall-distortion",
    "8. Recall distortion slope α (002)",
    "8 α",
    lambda v: recall_study_view.distortion(v.measures),
    population=True,
  ),
  Section(
    "recall-study",
    "9. Recall distortion after one-shot pruning (002)",
    "9 One-shot",
    lambda v: recall_study_view.oneshot_study(v.measures),
    population=True,
  ),
  Section(
    "prune-retrain",
    "9b. Prune-retrain: how far each parent prunes, per distribution (003)",
    "9b Prune-retrain",
    lambda v: prune_retrain_plots.section(v.measures),
    optional=True,
  ),
  Section(
    "deployment",
    "10. Deployment: encoding, size, latency vs accuracy",
    "10 Deployment",
    lambda v: sections.deployment(v.measures),
  ),
  Section(
    "gallery",
    "11. Gallery: top Taxicab CIEs for human review (004 Figure 3)",
    "11 Gallery",
    lambda v: (
      sections.gallery(v.gallery, v.protected)
      + divergence_view.gallery(v.measures, v.divergence_images)
    ),
  ),
  Section("notes", "Notes", "Notes", lambda v: sections.notes(v.measures, v.extra_notes)),
)


LEFT_OUT = Section(
  "left-out", "Left out for one network (K = 1)", "Left out", lambda v: None, optional=True
)
SKIPPED_MARK = "<p class=\"skip\">Not shown: "


def _left_out_line(folded):
  """The one line that names the sections a K = 1 report leaves out, and why.

  Args:
    folded: [(section, reason)]: a population section (reason "") or one with nothing to show.
  """
  population = [s.nav for s, _ in folded if s.population]
  empty = [f"{s.nav} ({reason})" for s, reason in folded if not s.population]
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


def _reason(text):
  """The reason of a "Not shown: <reason>." line, as plain text."""
  return html_lib.unescape(text[len(SKIPPED_MARK) :].split("</p>")[0]).rstrip(".")


def render(view):
  """[(section, inner HTML)] of the page, in order; optional sections that do not apply are out.

  With one network (K = 1, `single_network`) the sections that compare populations
  (`Section.population`) and those with nothing to show ("Not shown: ...") are left out too,
  and one line before the notes (`LEFT_OUT`) names them and says why.

  Raises:
    ValueError: a section that is not optional rendered None (a bug in its render function).
  """
  out, folded = [], []
  k1 = bool(view.measures.config.get("single_network"))
  for section in SECTIONS:
    if k1 and section.population:
      folded.append((section, ""))
      continue
    text = section.render(view)
    if text is None and not section.optional:
      raise ValueError(f"report section {section.id!r} rendered nothing")
    if k1 and text is not None and text.startswith(SKIPPED_MARK) and section.id != "notes":
      folded.append((section, _reason(text)))
      continue
    if text is not None:
      if section.id == "notes" and folded:
        out.append((LEFT_OUT, _left_out_line(folded)))
      out.append((section, text))
  return out
