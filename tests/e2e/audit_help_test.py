"""`audit --help` lists every flag of the audit binary once, section by section.

The flags are those absl lists under `--helpfull` for the module that defines them once for
`eval/audit.py` and `tf-forget audit` (`tf_forget.commands.audit_flags`; a second
listing, made by absl), plus `--verbose` (`tf_forget.cli.app`'s); a flag added without a
section makes `--help` fail loudly instead of hiding it.
"""

import re

from tests.cli import help_listing
from tests.e2e import audit_binary

SECTIONS = [
  "what to audit, and where",
  "your own model, files and data",
  "populations tf_forget trains",
  "pruning after training (002 one-shot, 003 prune-retrain)",
  "post-training formats",
  "robustness and noise",
  "gates (exit status 3 when one fails)",
  "why it forgot, and repairs",
  "deployment bundle",
  "where the work runs",
  "000's human study",
]


def test_help_lists_every_flag_once_in_its_section():
  result = audit_binary.audit(["--help"])
  assert result.returncode == 0, result.stderr[-2000:]
  text = result.stdout
  headings = [
    line[:-1]
    for line in text.splitlines()
    if line.endswith(":") and not line.startswith(" ") and line[:-1] in SECTIONS
  ]
  assert headings == SECTIONS
  listed = re.findall(r"^  --(\w+):", text, flags=re.M)
  assert len(listed) == len(set(listed))  # each flag once
  full = audit_binary.audit(["--helpfull"])
  assert full.returncode == 0
  own = help_listing.flags_under(full.stdout, r"tf_forget\.commands\.audit_flags:")
  assert len(own) > 60 and set(listed) == own | {"verbose"}
  assert "--config: A configuration to start from" in text
