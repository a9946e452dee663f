"""Calibrates the margins of tests/e2e/audit_properties_test.py.

Runs the properties test's two audits (digits 300 steps, digits_biased 600 steps; 3 members x
dense / prune_0.9 + full_int8) for several population seeds under several CPU-kernel settings
(tf_forget/compat/cpu_kernels.py), one subprocess per run so each gets its own kernels, and
prints one JSON line per run with the numbers the properties test asserts on, then the range
of each over all runs. Long (about 1.5-3 minutes a run on 2 cores): not part of the suite.

Run: PYTHONPATH=. .venv/bin/python benchmarks/calibrate_properties.py --seeds 0,1,2 \
       [--settings S0,S1,S2,S3] [--out /tmp/calibration.jsonl]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

SETTINGS = {
  "S0": {},  # the defaults: oneDNN off, 2 intra-op threads
  "S1": {"TF_ENABLE_ONEDNN_OPTS": "1"},
  "S2": {"TF_ENABLE_ONEDNN_OPTS": "1", "ONEDNN_MAX_CPU_ISA": "AVX2"},
  "S3": {"TF_NUM_INTRAOP_THREADS": "1"},
}

_ONE_RUN = r"""
import json, sys, tempfile
from tf_forget.compat import cpu_kernels, keras2
keras2.enable(); cpu_kernels.configure()
sys.path.insert(0, "tests/e2e")
import audit_properties_test as t
dataset, seed = sys.argv[1], int(sys.argv[2])
report = t._audit(dataset, tempfile.mkdtemp(), population_seed=seed)
v, tables = report["variants"], report["tables"]
row = {"dataset": dataset, "seed": seed, "settings": cpu_kernels.settings()}
for name in ("dense", "prune_0.9", "full_int8"):
  row[name] = {k: v[name].get(k) for k in ("top1", "top1_change", "pie_count",
                                           "significant_classes")}
fnr = [r for r in tables.get("subgroups", []) if r["variant"] == "prune_0.9"
       and r["metric"] == "fnr"]
if fnr:
  base = next(r for r in fnr if r["model"] == "baseline")
  comp = next(r for r in fnr if r["model"] == "compressed")
  row["fnr_increase"] = {k: comp[k] - base[k] for k in base
                         if k not in ("metric", "model", "variant") and base[k] is not None}
row["similarity"] = {f"{r['variant']}|{r['eps']:g}": r["matching"]
                     for r in tables["noise_similarity"] if r["eps"] in (0.4, 0.7)}
print(json.dumps(row))
"""


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--seeds", default="0,1,2")
  parser.add_argument("--settings", default=",".join(SETTINGS))
  parser.add_argument("--datasets", default="digits,digits_biased")
  parser.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "calibration.jsonl"))
  args = parser.parse_args()
  rows = []
  for seed in [int(s) for s in args.seeds.split(",")]:
    for name in args.settings.split(","):
      for dataset in args.datasets.split(","):
        env = {
          k: v
          for k, v in os.environ.items()
          if k
          not in (
            "TF_ENABLE_ONEDNN_OPTS",
            "ONEDNN_MAX_CPU_ISA",
            "TF_NUM_INTRAOP_THREADS",
            "TF_NUM_INTEROP_THREADS",
          )
        }
        env.update(SETTINGS[name], TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="2")
        out = subprocess.run(
          [sys.executable, "-c", _ONE_RUN, dataset, str(seed)],
          env=env,
          check=True,
          capture_output=True,
          text=True,
        )
        row = dict(json.loads(out.stdout.strip().splitlines()[-1]), tag=name)
        rows.append(row)
        print(json.dumps(row), flush=True)
        with open(args.out, "a") as f:
          f.write(json.dumps(row) + "\n")
  for dataset in args.datasets.split(","):
    rs = [r for r in rows if r["dataset"] == dataset]
    for variant in ("prune_0.9", "full_int8"):
      for key in ("top1_change", "pie_count", "significant_classes"):
        vals = [r[variant][key] for r in rs]
        print(f"{dataset} {variant} {key}: {min(vals):.3f} .. {max(vals):.3f}")
    if rs and "fnr_increase" in rs[0]:
      for group in ("Inverted=1", "aggregate", "Inverted=0", "Faint=1", "Faint=0"):
        vals = [r["fnr_increase"][group] for r in rs]
        print(f"{dataset} FNR increase {group}: {min(vals):+.3f} .. {max(vals):+.3f}")


if __name__ == "__main__":
  main()
