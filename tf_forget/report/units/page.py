"""The page's own sections, which no computation feeds: the glossary (`verdict.glossary`)
and the notes (every unit's notes and the report's settings), the page's last section.
"""

from tf_forget.report import html
from tf_forget.report import unit
from tf_forget.report.units import verdict
from tf_forget.report.words import folding


def notes_section(notes, settings):
  """The notes section: every note, folded, and the settings."""
  items = [f"{k}: {n}" for k, ns in sorted(notes.items()) for n in folding.fold_notes(ns)]
  items.append("settings: " + ", ".join(f"{k}={v}" for k, v in sorted(settings.items())))
  return "<ul>" + "".join(f"<li>{html.esc(i)}</li>" for i in items) + "</ul>"


GLOSSARY = unit.Unit(
  "glossary",
  sections=(unit.Section("glossary", "How to read this report", "Terms", (), verdict.glossary),),
)
NOTES = unit.Unit(
  "notes", sections=(unit.Section("notes", "Notes", "Notes", ("notes", "settings"), notes_section),)
)
