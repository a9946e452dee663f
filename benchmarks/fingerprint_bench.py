"""Benchmark: what identifying the user's data by content costs.

Builds the inputs of `benchmarks/user_audit_bench.py` (a Keras reference, three candidates, a
folder of `--images` random 32x32 RGB PNGs in 10 class folders), runs the audit once as a user
does (a subprocess), and measures in this process, on the same folder:

  (a) the first run's fingerprint: every file read, hashed and its image header checked
      (`tf_forget.data.fingerprint`, as `tf_forget.pipeline.data_identity.attach` calls it; the page
      cache is warm, as it is for the audit that follows its own validation);
  (b) an unchanged re-run's check: the same files against the first run's record (one `stat`
      per file, nothing read);

and reports (a) over the audit's evaluation stage ("TFLite evaluation", from its section
headers; target <= 10%), and (b) in seconds per 10,000 files (target <= 1 s). It also checks
that the audit itself said "0 read" on a re-run.

    PYTHONPATH=. TF_USE_LEGACY_KERAS=1 .venv/bin/python benchmarks/fingerprint_bench.py \
        [--images=10000] [--repeats=3]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import user_audit_bench
from tf_forget.data import fingerprint
from tf_forget.data import registry


def timed(fn, repeats):
  """(median seconds, last result) of `fn()` over `repeats` calls."""
  times, result = [], None
  for _ in range(repeats):
    start = time.perf_counter()
    result = fn()
    times.append(time.perf_counter() - start)
  return statistics.median(times), result


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--images", type=int, default=10000)
  parser.add_argument("--repeats", type=int, default=3)
  args = parser.parse_args()
  with tempfile.TemporaryDirectory() as tmp:
    paths = user_audit_bench.write_inputs(tmp, args.images, width=8, seed=0)
    out = os.path.join(tmp, "audit")
    wall, stages, _, code, _ = user_audit_bench.run_audit(paths, out, num_threads=2)
    if code != 0:
      raise SystemExit(f"the audit failed (exit {code})")
    evaluation = next(s for _, name, s in stages if name == "TFLite evaluation")
    folder = registry.get("folder", path=paths["images"])
    files = folder.content_files("test")
    check = fingerprint.image_check(str)
    cold, first = timed(lambda: fingerprint.fingerprint(files, check=check), args.repeats)
    cache = fingerprint.cache_of(first.entries)
    warm, second = timed(
      lambda: fingerprint.fingerprint(files, cache=cache, check=check), args.repeats
    )
    assert first.hashed == len(files) and second.hashed == 0 and second.digest == first.digest
    rerun = user_audit_bench.run_audit(paths, out, num_threads=2)
    said = [line for line in rerun[4] if line.strip().startswith("data: ")]
  print(f"\n{len(files)} files; audit wall {wall:.1f} s, evaluation stage {evaluation:.1f} s")
  print(
    f"(a) first-run fingerprint: {cold:.2f} s = {cold / evaluation:.1%} of the evaluation "
    "stage (target <= 10%)"
  )
  print(
    f"(b) unchanged re-run check: {warm:.3f} s = {warm * 10000 / len(files):.3f} s per "
    "10,000 files (target <= 1 s)"
  )
  print("the audit's re-run said:", *said)


if __name__ == "__main__":
  main()
