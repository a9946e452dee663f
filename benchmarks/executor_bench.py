"""Executor benchmarks: ratios measured in one run, on this machine.

1. `audit`: the default `make audit` job (digits, the data set's protocol) with
   `--executor=inline`, `--executor=local --workers=1` and `--workers=2`, each from an empty
   run directory, each in its own process (as `bazel run //eval:audit` runs it); prints wall
   times, stage times, and whether the reports' numbers are identical.
2. `ray_overhead`: Ray's cost per evaluation task — the same evaluation tasks (one member's
   files on the test split, predictions already current, so a task is all overhead but for the
   skip checks) on `inline`, on `local --workers=2` and on a local Ray with 2 CPUs; ms per
   task.
3. `ray_train`: member training on a local Ray with 1 vs 2 CPUs (4 members of the digits
   protocol at --steps): wall time ratio.

Run (long; not part of the test suite):
  PYTHONPATH=. .venv/bin/python benchmarks/executor_bench.py [--parts audit,ray_overhead,ray_train]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _audit(out, *flags):
  """(wall seconds, stdout) of `eval/audit.py` on the default digits job."""
  cmd = [sys.executable, os.path.join(ROOT, "eval", "audit.py"), f"--out={out}", *flags]
  t0 = time.time()
  done = subprocess.run(
    cmd, env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, text=True, check=True
  )
  return time.time() - t0, done.stdout


def _stages(stdout):
  """{stage header: seconds since start} from the audit's '== i/6 name  [t s]' lines."""
  return {
    m.group(1): int(m.group(2)) for m in re.finditer(r"== \d/6 ([^\[]+?)\s+\[(\d+) s\]", stdout)
  }


def bench_audit(tmp):
  runs = {
    "inline": ["--executor=inline"],
    "local_1": ["--executor=local", "--workers=1"],
    "local_2": ["--executor=local", "--workers=2"],
  }
  reports, times = {}, {}
  for name, flags in runs.items():
    out = os.path.join(tmp, f"audit_{name}")
    seconds, stdout = _audit(out, *flags)
    times[name] = seconds
    with open(os.path.join(out, "report.json")) as f:
      report = json.load(f)
    reports[name] = json.dumps(report["variants"], sort_keys=True)
    print(f"audit {name}: {seconds:.0f} s wall; stage starts {_stages(stdout)}", flush=True)
  base = times["inline"]
  for name, seconds in times.items():
    print(
      f"audit {name}: {seconds / base:.2f}x inline; same report numbers as inline: "
      f"{reports[name] == reports['inline']}"
    )


def _eval_tasks(run_dir, n):
  from tf_forget.executor import executor_api

  return [
    executor_api.Task(
      key=f"eval dense/0 #{i}",
      fn="tf_forget.pipeline.eval_tasks:evaluate_files",
      kwargs={
        "run_dir": run_dir,
        "files": [["dense", 0]],
        "dataset": "digits",
        "dataset_options": {},
        "num_threads": 2,
        "splits": ["test"],
      },
    )
    for i in range(n)
  ]


def bench_ray_overhead(tmp, n=40):
  from tf_forget import executor
  from tf_forget.pipeline import executors

  run = os.path.join(tmp, "overhead")
  _audit(
    run,
    "--executor=inline",
    "--members=2",
    "--variants=dense",
    "--quantizations=",
    "--corruptions=none",
    "--noise_levels=none",
    "--deploy_encoding=plain",
    "--steps=300",
  )
  env = executors.worker_env()
  for name, workers in (("inline", None), ("local", 2), ("ray", 2)):
    with executor.make(name, workers=workers, env=env) as ex:
      ex.run(_eval_tasks(run, 2), stage="warm-up", log=lambda line: None)  # workers started
      t0 = time.time()
      ex.run(_eval_tasks(run, n), stage="bench", log=lambda line: None)
      ms = 1000 * (time.time() - t0) / n
    print(
      f"evaluation task (current predictions, skip checks only) on {name}: {ms:.1f} ms/task",
      flush=True,
    )


def bench_ray_train(tmp, steps=600):
  from tf_forget import executor
  from tf_forget.executor import executor_api
  from tf_forget.pipeline import executors
  from tf_forget.pipeline import tasks
  from tf_forget.train import member_config
  from tf_forget.train import presets

  env = executors.worker_env()
  preset = presets.get("digits", steps=steps)
  times = {}
  for cpus in (1, 2):
    run = os.path.join(tmp, f"ray_train_{cpus}")
    todo = [
      executor_api.Task(
        key=f"train {v}/{k}",
        fn="tf_forget.pipeline.tasks:train_member",
        kwargs=dict(
          run_dir=run,
          **tasks.member_kwargs(
            member_config.MemberConfig(
              dataset="digits", model="small_cnn", variant=v, k=k, preset=preset
            )
          ),
        ),
      )
      for k in range(2)
      for v in ("dense", "prune_0.9")
    ]
    with executor.make("ray", workers=cpus, env=env) as ex:
      t0 = time.time()  # includes each worker's TensorFlow import, as in an audit
      ex.run(todo, stage="train", log=lambda line: None)
      times[cpus] = time.time() - t0
    print(
      f"ray, {cpus} CPU(s): 4 digits members of {steps} steps in {times[cpus]:.0f} s", flush=True
    )
  print(f"ray training speed-up, 2 vs 1 CPUs: {times[1] / times[2]:.2f}x")


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--parts", default="audit,ray_overhead,ray_train")
  args = parser.parse_args()
  from tf_forget.compat import cpu_kernels
  from tf_forget.compat import keras2

  keras2.enable()
  cpu_kernels.configure()
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  print(f"machine: {cpu_kernels.describe()}", flush=True)
  with tempfile.TemporaryDirectory() as tmp:
    for part in args.parts.split(","):
      {"audit": bench_audit, "ray_overhead": bench_ray_overhead, "ray_train": bench_ray_train}[
        part
      ](tmp)


if __name__ == "__main__":
  main()
