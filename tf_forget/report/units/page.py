"""The page's own sections, which no computation feeds: the glossary (`verdict_view.glossary`)
and the notes (every unit's notes and the report's settings), the page's last section.
"""

from tf_forget.report import sections
from tf_forget.report import unit
from tf_forget.report import verdict_view

GLOSSARY = unit.Unit("glossary", sections=(
    unit.Section("glossary", "How to read this report", "Terms", (), verdict_view.glossary),))
NOTES = unit.Unit("notes", sections=(
    unit.Section("notes", "Notes", "Notes", ("notes", "settings"), sections.notes),))
