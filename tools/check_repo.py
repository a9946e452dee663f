"""Checks that the code and docs stand on their own: no history, no path outside, no dead link.

    python tools/check_repo.py          # the checkout this file is in; exit 1 on a finding

The checked files: the package, the binaries, the docs, the tests, the benchmarks, the tools and
the examples (`.py`, `.md`, `.json`, `.txt`, `.sh`, `.bzl` and `BUILD` files), and README.md.

Findings, one line each (`path:line: what`):
* an issue number anywhere in those files (the word "issue", then `#` and digits; or a bare
  `#` and digits that close a parenthesis, or come before `'s` or a slash and another one): git
  log and CHANGELOG.md are the history, the code says what it is;
* a path outside the repository (the folder `shared` beside the checkout): the repository must
  stand alone;
* a citation of the specification that is not `docs/spec.md §n[.m]`, or whose section
  docs/spec.md does not have;
* a relative Markdown link whose file does not exist, or whose `#anchor` matches no heading of
  that file (GitHub's anchors: lower case, punctuation dropped, spaces to hyphens).
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
CODE_DIRS = (
  "tf_forget",
  "eval",
  "tflite_export",
  "docs",
  "tests",
  "benchmarks",
  "tools",
  "examples",
)
TOP_FILES = ("README.md",)
SUFFIXES = (".py", ".md", ".json", ".txt", ".sh", ".bzl")
NAMES = ("BUILD",)
# The word "issue" and its number; a bare number that closes a parenthesis, or comes before 's
# or a slash and another one. Not a CSS colour (`#` and hex digits before `;` or `}`), nor another
# repository's `owner/name#N`.
ISSUE = re.compile(r"\bissues? #\d+|(?<![\w&/#-])#\d{1,4}(?=\)|'s\b|/#\d)", re.IGNORECASE)
OUTSIDE = re.compile(r"\.\./shared")
SPEC_CITE = re.compile(r"(docs/spec\.md|spec\.md|SPEC)\s*§\s*(\d+(?:\.\d+)?)")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def files(root=ROOT):
  """The checked files: `SUFFIXES` and `NAMES` under `CODE_DIRS`, and the top-level `TOP_FILES`."""
  out = [os.path.join(root, f) for f in TOP_FILES if os.path.exists(os.path.join(root, f))]
  for top in CODE_DIRS:
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
      dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
      out += [
        os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(SUFFIXES) or f in NAMES
      ]
  return out


def slug(heading):
  """GitHub's anchor of a Markdown heading."""
  text = re.sub(r"`|\*|_(?=\W)|(?<=\W)_", "", heading.strip().lower())
  text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
  text = re.sub(r"[^\w\- ]", "", text)
  return text.replace(" ", "-")


def anchors(path):
  """The anchors of a Markdown file's headings (duplicates numbered as GitHub does)."""
  seen, out = {}, set()
  in_code = False
  with open(path, encoding="utf-8") as f:
    for line in f:
      if line.startswith("```"):
        in_code = not in_code
      match = None if in_code else HEADING.match(line)
      if match:
        base = slug(match.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
  return out


def spec_sections(root=ROOT):
  """The section numbers docs/spec.md defines (`## 6.` headings and `6.4` items)."""
  path = os.path.join(root, "docs", "spec.md")
  if not os.path.exists(path):
    return set()
  sections = set()
  with open(path, encoding="utf-8") as f:
    for line in f:
      match = re.match(r"^(?:##\s+)?(\d+)(\.\d+)?[.\s]", line.strip())
      if match:
        sections.add(match.group(1) + (match.group(2) or ""))
  return sections


def _link_problem(path, target, cache):
  if re.match(r"^[a-z]+:", target) or target.startswith("#") and not path.endswith(".md"):
    return None
  file_part, _, anchor = target.partition("#")
  dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
  if not os.path.exists(dest):
    return f"link to a missing file {target}"
  if anchor and dest.endswith(".md"):
    if dest not in cache:
      cache[dest] = anchors(dest)
    if anchor not in cache[dest]:
      return f"link to a missing anchor {target}"
  return None


def check(root=ROOT):
  """All findings of the checkout at `root`, as `path:line: what` lines."""
  sections = spec_sections(root)
  cache, findings = {}, []
  for path in files(root):
    rel = os.path.relpath(path, root)
    with open(path, encoding="utf-8") as f:
      lines = f.read().splitlines()
    for n, line in enumerate(lines, start=1):
      where = f"{rel}:{n}"
      if ISSUE.search(line):
        findings.append(
          f"{where}: an issue number ({ISSUE.search(line).group(0)}): say what "
          "the code is, the history is in git"
        )
      if OUTSIDE.search(line):
        findings.append(f"{where}: a path outside the repository ({OUTSIDE.search(line).group(0)})")
      for match in SPEC_CITE.finditer(line):
        if match.group(1) == "SPEC":
          findings.append(f"{where}: cite the specification as docs/spec.md §{match.group(2)}")
        elif sections and match.group(2) not in sections:
          findings.append(f"{where}: docs/spec.md has no §{match.group(2)}")
      if rel.endswith(".md"):
        for match in LINK.finditer(line):
          problem = _link_problem(path, match.group(1), cache)
          if problem:
            findings.append(f"{where}: {problem}")
  return findings


def main():
  findings = check()
  for line in findings:
    print(line)
  print(
    f"{len(findings)} finding{'' if len(findings) == 1 else 's'} in {len(files())} files",
    file=sys.stderr,
  )
  return 1 if findings else 0


if __name__ == "__main__":
  sys.exit(main())
