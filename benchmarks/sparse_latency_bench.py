"""Benchmark: size and latency of sparse-encoded TFLite files vs their plain twins.

Trains (or reuses, in `--work_dir`) one `digits` member per variant (dense, prune_0.5, prune_0.9) of
the small CNN with a shortened `digits` preset (`--steps`; tfmot's gradual magnitude pruning,
stripped), exports every format plain and sparse-encoded (`tf_forget.export.export`,
`--encodings=plain,sparse`), evaluates every file as on a device
(`tf_forget.evaluate.population_eval`: XNNPACK, else the built-in kernels) with the twin check, and
times each sparse file together with its plain twin in one interleaved run
(`tf_forget.evaluate.latency.measure`: median batch-1 and batch-64 latency, `--num_threads`).
Prints:

  * sizes: plain and sparse bytes (raw, gzip), sparse / plain, sparse / dense float32 file,
    kernel sparsity counted from the file;
  * latency: median ms at batch 1 and 64, plain and sparse, their ratio (the baseline is the
    plain twin, measured in the same run), the runtime path of each, top-1 agreement of the
    sparse file with its twin and the twin check, and `deploy.choose_encoding`'s choice.

    python benchmarks/sparse_latency_bench.py --work_dir=/tmp/sparse_bench --steps=600
"""

import dataclasses
import json
import os
import sys

from absl import app
from absl import flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tf_forget.artifacts import names
from tf_forget.compat import cpu_kernels
from tf_forget.compat import keras2

_WORK_DIR = flags.DEFINE_string(
  "work_dir", "/tmp/tf_forget_sparse_bench", "Run directory (members are reused across runs)."
)
_STEPS = flags.DEFINE_integer(
  "steps", 600, "Training steps per member (digits preset: 1200).", lower_bound=300
)
_SPARSITIES = flags.DEFINE_list("sparsities", ["0.5", "0.9"], "Pruned variants' targets.")
_NUM_THREADS = flags.DEFINE_integer("num_threads", 2, "Interpreter threads.", lower_bound=1)
_REPEATS = flags.DEFINE_integer(
  "repeats", 30, "Timed invocations per file and batch size.", lower_bound=1
)
_MAX_SPARSE_LATENCY_RATIO = flags.DEFINE_float(
  "max_sparse_latency_ratio", 1.5, "Bound for deploy.choose_encoding (auto)."
)
_JSON = flags.DEFINE_string("json", None, "Optional path for the raw results as JSON.")


def _train(work_dir, steps, sparsities, log):
  from tf_forget.train import member
  from tf_forget.train import member_config
  from tf_forget.train import member_files
  from tf_forget.train import presets

  preset = dataclasses.replace(presets.get("digits"), steps=steps, checkpoint_every=steps // 2)
  variants = ["dense"] + [f"prune_{s}" for s in sparsities]
  for variant in variants:
    config = member_config.MemberConfig(
      dataset="digits", model="small_cnn", variant=variant, k=0, preset=preset
    )
    log(f"member {variant}/0 ...")
    member.train_member(config, member_files.member_dir(work_dir, variant, 0))
  return variants


def _twin_text(twin):
  """The twin check in a cell: equal, differs by runtime path only, or differs."""
  if twin["equal"]:
    return "equal"
  if twin.get("encoding_exact"):
    same = twin["same_runtime"]
    return (
      f"differs (runtime path only; same runtime: equal, max err {same['max_abs_logit_error']:.2g})"
    )
  return "DIFFERS"


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  keras2.enable()
  cpu_kernels.configure()
  from tf_forget.evaluate import deploy
  from tf_forget.evaluate import latency
  from tf_forget.evaluate import population_eval
  from tf_forget.export import export
  from tf_forget.export import export_state

  work = _WORK_DIR.value
  log = lambda s: print(s, file=sys.stderr, flush=True)
  _train(work, _STEPS.value, _SPARSITIES.value, log)
  fmts = list(names.FORMAT_NAMES)
  exports = export.export_population(work, fmts, fmts, encodings=("plain", "sparse"), log=log)
  failed = {(r["member_variant"], r["format"]): r["failed"] for r in exports if "failed" in r}
  table = population_eval.evaluate_population(work, check_keras=False, log=log)["test"]
  rows = {(r["member_variant"], r["format"], r["encoding"]): r for r in table["rows"]}

  def meta(mv, fmt, enc):
    path = export_state.export_paths(work, names.Variant(mv, fmt, enc), 0)[1]
    return json.load(open(path)) if os.path.exists(path) else None

  dense_f32 = meta("dense", "float32", "plain")["size_bytes"]["raw"]
  results = []
  for mv in sorted({r[0] for r in rows}, key=lambda m: (m != "dense", m)):
    for fmt in fmts:
      plain, sparse = meta(mv, fmt, "plain"), meta(mv, fmt, "sparse")
      files = {"plain": export_state.export_paths(work, names.Variant(mv, fmt), 0)[0]}
      if sparse is not None:
        files["sparse"] = export_state.export_paths(work, names.Variant(mv, fmt, "sparse"), 0)[0]
      lat = latency.measure(files, num_threads=_NUM_THREADS.value, repeats=_REPEATS.value)
      twin = (rows.get((mv, fmt, "sparse")) or {}).get("vs_plain_twin")
      choice = deploy.choose_encoding(
        {"size": plain["size_bytes"]["raw"], "latency": lat["plain"]["batch_1"]["median_s"]},
        None
        if sparse is None and (mv, fmt) not in failed
        else {
          "size": sparse["size_bytes"]["raw"] if sparse else None,
          "latency": lat["sparse"]["batch_1"]["median_s"] if sparse else None,
          "twin_equal": twin and twin["equal"],
          "twin_reason": twin and twin["reason"],
          "error": failed.get((mv, fmt)),
        },
        _MAX_SPARSE_LATENCY_RATIO.value,
      )
      results.append(
        {
          "member_variant": mv,
          "format": fmt,
          "plain": plain["size_bytes"],
          "sparse": sparse and sparse["size_bytes"],
          "kernel_sparsity": plain["sparsity"]["kernels"]["fraction"],
          "latency": lat,
          "twin": twin,
          "choice": choice,
        }
      )
  print(f"\nSizes (bytes; dense float32 file = {dense_f32:,} B)")
  print(
    "| member | format | kernel sparsity | plain | sparse | sparse/plain | sparse gzip/plain "
    "gzip | shipped / dense float32 |"
  )
  print("| --- | --- | --- | --- | --- | --- | --- | --- |")
  for r in results:
    sp = r["sparse"]
    shipped = sp["raw"] if sp and r["choice"][0] == "sparse" else r["plain"]["raw"]
    print(
      f"| {r['member_variant']} | {r['format']} | {r['kernel_sparsity']:.3f} | "
      f"{r['plain']['raw']:,} | {sp['raw']:,} | {sp['raw'] / r['plain']['raw']:.3f} | "
      f"{sp['gzip'] / r['plain']['gzip']:.3f} | {shipped / dense_f32:.3f} |"
      if sp
      else f"| {r['member_variant']} | {r['format']} | {r['kernel_sparsity']:.3f} | "
      f"{r['plain']['raw']:,} | failed | - | - | {shipped / dense_f32:.3f} |"
    )
  print(
    f"\nMedian latency (ms, {_NUM_THREADS.value} threads, {_REPEATS.value} runs, plain and "
    "sparse interleaved in one run)"
  )
  print(
    "| member | format | runtime plain / sparse | b1 plain | b1 sparse | b1 ratio | b64 plain "
    "| b64 sparse | b64 ratio | top-1 agree | twin check | auto choice |"
  )
  print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
  for r in results:
    lat, twin = r["latency"], r["twin"]
    p, s = lat["plain"], lat.get("sparse")
    if s is None:
      print(
        f"| {r['member_variant']} | {r['format']} | {p['runtime']} / - | "
        f"{1e3 * p['batch_1']['median_s']:.3f} | - | - | "
        f"{1e3 * p['batch_64']['median_s']:.3f} | - | - | - | - | {r['choice'][0]} |"
      )
      continue
    print(
      f"| {r['member_variant']} | {r['format']} | {p['runtime']} / {s['runtime']} | "
      f"{1e3 * p['batch_1']['median_s']:.3f} | {1e3 * s['batch_1']['median_s']:.3f} | "
      f"{latency.ratio(s, p, 1):.2f} | {1e3 * p['batch_64']['median_s']:.3f} | "
      f"{1e3 * s['batch_64']['median_s']:.3f} | {latency.ratio(s, p, 64):.2f} | "
      f"{twin['top1_agreement']:.4f} | {_twin_text(twin)} | "
      f"{r['choice'][0]} |"
    )
  print(
    "\nChoices (deploy.choose_encoding, auto, batch-1 latency, max ratio "
    f"{_MAX_SPARSE_LATENCY_RATIO.value}):"
  )
  for r in results:
    print(f"  {r['member_variant']}/{r['format']}: {r['choice'][0]} - {r['choice'][1]}")
  for f in table["twin_failures"]:
    print(f"  TWIN FAILURE {f['variant']}/{f['k']}: {f['reason']}")
  if _JSON.value:
    with open(_JSON.value, "w") as f:
      json.dump(results, f, indent=1)
  return 0


if __name__ == "__main__":
  app.run(main)
