"""Benchmark: the default audit (`make audit`), A/B against a base tree, and its outputs compared.

Each code tree (`--trees`: e.g. the base commit's worktree in /tmp/base, then this checkout) runs

    python eval/audit.py --out=<work>/<tree index>_<repeat>

(what `bazel run //eval:audit` runs: the default digits audit), alternating the trees
`--repeats` times. It prints each run's wall time (process start to exit), the seconds of
each section (from its `== i/n name [s]` header to the next one) and the CPU time of the audit
and its workers (user + system core-seconds: work done, which drifts less with the machine than
the wall time does), then the median per tree and its ratio to the first tree.

Then it compares every tree's first run with the first tree's:

  * report.json, every `.npz` (predictions/, predictions_keras/, noise/), every `.tflite`,
    and every member's model.keras, by sha256;
  * where the bytes differ, what two runs of one tree differ in anyway is set aside: in an
    `.npz`, every array must be equal and the `metadata` equal once the run directory's path,
    the measured `seconds` / `examples_per_second` and `inputs.model` (the sha256 of
    model.keras, whose own metadata.json holds its save time) are dropped; in model.keras,
    the weights file and config.json must be equal; in report.json, only latency
    measurements may differ (keys with `latency`, `_ms`, `vs_reference`, sentences that are
    equal once their numbers are masked) and the ship rule's outcome that ranks files by them
    (`recommendation/front*`, the verdict table's `verdict` and `reason`), each listed.

It exits 1 when any other byte differs. Run nothing else meanwhile (2 cores: the timings are
the machine's); `--env NAME=VALUE` runs both trees under another environment, e.g.
`TF_NUM_INTRAOP_THREADS=1` (the comparison then holds between the two trees under it).

    git worktree add /tmp/base <base commit>
    PYTHONPATH=. TF_USE_LEGACY_KERAS=1 .venv/bin/python benchmarks/make_audit_bench.py \\
        --trees=/tmp/base,. [--repeats=2] [--env=TF_NUM_INTRAOP_THREADS=1] [--work=DIR]
"""

import argparse
import hashlib
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
import zipfile

import numpy as np

from benchmarks import code_trees

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = re.compile(r"^== (\d+)/(\d+) (.+?)\s+\[(\d+) s\]\s*$")
MEASURED = ("seconds", "examples_per_second")
NUMBER = re.compile(r"[-+]?\d+(\.\d+)?(e[-+]?\d+)?")
SHIP_RULE = re.compile(r"^/recommendation/front|^/tables/verdict\[\d+\]/(verdict|reason)$")


def run_audit(tree, out, env):
  """Runs the default audit of `tree` into `out`; (wall s, [(section, s)], output lines, CPU
  core-seconds of the audit's processes)."""
  shutil.rmtree(out, ignore_errors=True)
  env = code_trees.env(tree, **env)
  used = resource.getrusage(resource.RUSAGE_CHILDREN)
  start = time.perf_counter()
  proc = subprocess.Popen(
    [sys.executable, "eval/audit.py", f"--out={out}"],
    cwd=tree,
    env=env,
    stdout=subprocess.PIPE,
    stderr=subprocess.STDOUT,
    text=True,
  )
  marks, lines = [], []
  for line in proc.stdout:
    lines.append(line.rstrip("\n"))
    match = HEADER.match(line.strip())
    if match:
      marks.append((match.group(3), time.perf_counter() - start))
  code = proc.wait()
  wall = time.perf_counter() - start
  now = resource.getrusage(resource.RUSAGE_CHILDREN)  # the workers too: the audit waited for them
  cpu = (now.ru_utime + now.ru_stime) - (used.ru_utime + used.ru_stime)
  if code not in (0, 3):
    print("\n".join(lines[-30:]))
    raise SystemExit(f"the audit of {tree} failed (exit {code})")
  ends = [t for _, t in marks[1:]] + [wall]
  sections = [("start", marks[0][1] if marks else wall)]
  sections += [(name, end - t) for (name, t), end in zip(marks, ends)]
  return wall, sections, lines, cpu


def _files(root):
  """{relative path: absolute path} of the compared files of a run directory."""
  out = {}
  for directory, _, names in os.walk(root):
    for name in names:
      path = os.path.join(directory, name)
      rel = os.path.relpath(path, root)
      if rel == "report.json" or name.endswith((".npz", ".tflite")) or name == "model.keras":
        out[rel] = path
  return out


def _npz(path, root):
  """(arrays, metadata without what a run measures or where it ran) of a predictions file."""
  with np.load(path, allow_pickle=False) as data:
    arrays = {k: data[k] for k in data.files if k != "metadata"}
    meta = json.loads(str(data["metadata"])) if "metadata" in data.files else {}
  meta = json.loads(json.dumps(meta).replace(os.path.abspath(root), "<run>"))
  for key in MEASURED:
    meta.pop(key, None)
  (meta.get("inputs") or {}).pop("model", None)
  return arrays, meta


def _same_npz(a, b, root_a, root_b):
  (xa, ma), (xb, mb) = _npz(a, root_a), _npz(b, root_b)
  same = set(xa) == set(xb) and all(
    xa[k].dtype == xb[k].dtype and xa[k].shape == xb[k].shape and np.array_equal(xa[k], xb[k])
    for k in xa
  )
  return same and ma == mb


def _keras(path):
  with zipfile.ZipFile(path) as archive:
    return archive.read("model.weights.h5"), archive.read("config.json")


def _json_diff(a, b, path=""):
  """[(JSON path, a value, b value)] where `a` and `b` differ."""
  if type(a) is not type(b):
    return [(path, a, b)]
  if isinstance(a, dict):
    return [
      d for k in sorted(set(a) | set(b)) for d in _json_diff(a.get(k), b.get(k), f"{path}/{k}")
    ]
  if isinstance(a, list):
    if len(a) != len(b):
      return [(path, len(a), len(b))]
    return [d for i, (x, y) in enumerate(zip(a, b)) for d in _json_diff(x, y, f"{path}[{i}]")]
  return [] if a == b else [(path, a, b)]


def _timing(path, a, b):
  """Whether a report.json difference is a latency measurement or the ship rule ranking by it."""
  key = path.rsplit("/", 1)[-1].split("[")[0]
  if "latency" in key or "_ms" in key or key.startswith("vs_reference") or SHIP_RULE.match(path):
    return True
  return isinstance(a, str) and isinstance(b, str) and NUMBER.sub("#", a) == NUMBER.sub("#", b)


def _report(a, b, root_a, root_b):
  """(other differences, timing differences) of two report.json files."""

  def load(path, root):
    with open(path, encoding="utf-8") as f:
      return json.loads(f.read().replace(os.path.abspath(root), "<run>"))

  diffs = _json_diff(load(a, root_a), load(b, root_b))
  return [d for d in diffs if not _timing(*d)], [d for d in diffs if _timing(*d)]


def compare(root_a, root_b):
  """Prints how run `root_b`'s outputs compare with run `root_a`'s; True when equal."""
  a, b = _files(root_a), _files(root_b)
  same_bytes, same_values, different, timing = 0, 0, [], []
  for rel in sorted(set(a) | set(b)):
    if rel not in a or rel not in b:
      different.append(f"{rel}: only in {'the base' if rel in a else 'the candidate'}")
      continue
    if (
      hashlib.sha256(open(a[rel], "rb").read()).digest()
      == hashlib.sha256(open(b[rel], "rb").read()).digest()
    ):
      same_bytes += 1
    elif rel.endswith(".npz") and _same_npz(a[rel], b[rel], root_a, root_b):
      same_values += 1
    elif rel.endswith("model.keras") and _keras(a[rel]) == _keras(b[rel]):
      same_values += 1
    elif rel == "report.json":
      other, timing = _report(a[rel], b[rel], root_a, root_b)
      different += [f"report.json {p}: {str(x)[:80]!r} vs {str(y)[:80]!r}" for p, x, y in other]
      same_values += not other
    else:
      different.append(f"{rel}: bytes differ")
  print(
    f"  {len(set(a) | set(b))} files: {same_bytes} byte-identical, {same_values} equal once "
    f"measured times, the run's path and model.keras' save time are set aside, "
    f"{len(different)} different"
  )
  if timing:
    kinds = sorted({re.sub(r"\[\d+\]", "[]", p) for p, _, _ in timing})
    print(f"  report.json: {len(timing)} values differ as latency timings or the ship rule")
    print(f"    ranking by them: {', '.join(kinds[:8])}{', ...' if len(kinds) > 8 else ''}")
  for line in different[:40]:
    print(f"  DIFFERENT {line}")
  return not different


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--trees", default=ROOT, help="comma-separated code trees; first = base")
  parser.add_argument("--repeats", type=int, default=1)
  parser.add_argument("--work", default="/tmp/make_audit_bench")
  parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for every run")
  args = parser.parse_args()
  trees = code_trees.compiled(args.trees.split(","))
  env = dict(item.split("=", 1) for item in args.env)
  runs = {t: [] for t in trees}
  for r in range(args.repeats):
    for i, tree in enumerate(trees):
      out = os.path.join(args.work, f"{i}_{r}")
      wall, sections, _, cpu = run_audit(tree, out, env)
      runs[tree].append((wall, dict(sections, cpu=cpu), out))
      parts = " ".join(f"{name} {s:.1f}" for name, s in sections)
      print(
        f"run {r} {tree}: wall {wall:.1f} s ({parts}) cpu {cpu:.1f} core-s"
        f" load {os.getloadavg()[0]:.2f}"
      )
  names = list(runs[trees[0]][0][1])
  print(
    f"\n{'section':22s}" + "".join(f"{os.path.basename(t) or t:>16s}" for t in trees) + "   ratio"
  )
  for name in ["wall"] + names:
    medians = [
      statistics.median(w if name == "wall" else s.get(name, 0.0) for w, s, _ in runs[t])
      for t in trees
    ]
    ratio = medians[-1] / medians[0] if medians[0] else float("nan")
    print(f"{name:22s}" + "".join(f"{m:16.1f}" for m in medians) + f"   {ratio:.2f}")
  equal = True
  for tree in trees[1:]:
    print(f"\noutputs of {tree} against {trees[0]} (first runs):")
    equal = compare(runs[trees[0]][0][2], runs[tree][0][2]) and equal
  sys.exit(0 if equal else 1)


if __name__ == "__main__":
  main()
