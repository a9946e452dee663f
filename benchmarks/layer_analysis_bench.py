"""Benchmark: what the per-layer analysis adds to the digits audit.

Runs the default digits audit as a user runs it (a subprocess, `eval/audit.py --out=<tmp>`,
plus `--repair=...` if given) and reads the moments its `== i/n <section> [t s]` headers
are printed: each section's seconds, the "why and repair" section's (the layer analyses, and
the repairs if asked) share of the audit's wall time, and the ratio of the audit's wall time
to the same wall time without that section (the target: < 1.30). Then, with every
artifact current, it removes `<out>/layers/` and runs the command again: the second run redoes
only the analyses (and reuses the rest), timing them on their own.

    PYTHONPATH=. TF_USE_LEGACY_KERAS=1 .venv/bin/python benchmarks/layer_analysis_bench.py \
        [--repair=auto] [--keep=DIR]

Timings are meant as ratios within one run (run it on an idle machine).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = re.compile(r"^== (\d+)/(\d+) (.+?)\s+\[(\d+) s\]\s*$")
WHY = "why and repair"


def run(out, repair):
  """(wall seconds, [(section, seconds)]) of one audit command."""
  env = dict(os.environ, PYTHONPATH=ROOT, TF_USE_LEGACY_KERAS="1")
  cmd = [
    sys.executable,
    os.path.join(ROOT, "eval", "audit.py"),
    f"--out={out}",
    *([f"--repair={repair}"] if repair else []),
  ]
  start = time.time()
  proc = subprocess.Popen(cmd, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
  marks = []
  for line in proc.stdout:
    match = HEADER.match(line.rstrip())
    if match:
      marks.append((match.group(3), time.time() - start))
  if proc.wait() != 0:
    raise SystemExit(f"audit failed (exit {proc.returncode}): {' '.join(cmd)}")
  wall = time.time() - start
  ends = [t for _, t in marks[1:]] + [wall]
  return wall, [(name, end - t) for (name, t), end in zip(marks, ends)]


def report(title, wall, sections):
  print(f"{title}: wall {wall:.1f} s")
  for name, seconds in sections:
    print(f"  {name:<28} {seconds:7.1f} s  {100 * seconds / wall:5.1f}%")
  why = sum(s for n, s in sections if n == WHY)
  return why


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--repair", default="", help="e.g. auto or cle,float1 (default: none)")
  parser.add_argument("--keep", help="run directory to keep (default: a temporary one)")
  args = parser.parse_args()
  tmp = args.keep or tempfile.mkdtemp(prefix="layer_analysis_bench_")
  out = os.path.join(tmp, "digits")
  try:
    wall, sections = run(out, args.repair)
    why = report("fresh audit", wall, sections)
    print(
      f"why and repair: {why:.1f} s = {100 * why / wall:.1f}% of the audit; audit / audit "
      f"without it = {wall / (wall - why):.3f} (target < 1.30)"
    )
    shutil.rmtree(os.path.join(out, "layers"))
    wall2, sections2 = run(out, args.repair)
    why2 = report("re-run with layers/ removed (only the analyses are redone)", wall2, sections2)
    print(f"the analyses alone: {why2:.1f} s")
  finally:
    if not args.keep:
      shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
  main()
