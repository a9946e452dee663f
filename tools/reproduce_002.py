"""Writes (or checks) the reproduction of 002's MNIST tables: CSV, run facts, page.

    python tools/reproduce_002.py --run=runs/mnist_002 docs/reproductions   # from a finished run
    python tools/reproduce_002.py --check docs/reproductions                # page == CSV's page

From a run of 002's protocol (`make reproduce-002`), `--run` reads the float32 predictions the
report reads, reduces them to one row per network (`reproduction_002.members_table`) and
writes `002_mnist_members.csv`, `002_mnist_run.json` (command, members, compute, machine,
stack) and `002_mnist.md`, each to a temporary name first. `--check` recomputes the page from
the CSV and the facts and exits 1 when the committed page differs.
"""

import argparse
import glob
import json
import os
import sys

import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tf_forget.report import reproduction_002

CSV = "002_mnist_members.csv"
FACTS = "002_mnist_run.json"
PAGE = "002_mnist.md"
COMMAND = "make reproduce-002 MNIST_DIR=/path/to/mnist REPRO_MEMBERS={members}"
# What the protocol fixes where 002 is silent or its code differs (docs/spec.md §6), said on
# the page; each names the option that changes it.
PROTOCOL = (
  "Data: the four standard MNIST IDX files, checked against the database's published MD5s "
  "(`--dataset=mnist --data_dir=DIR`); test split 10,000 images as published (not balanced: "
  "892 to 1,135 per class).",
  "Parents (preset `lenet5_002`): 002's LeNet-5 (ShrinkBench's: 3×3 convs 6 and 16, dense "
  "120, 84, 10; 60,074 parameters), SGD with momentum 0.9 (Nesterov), LR 0.01, batch 128, "
  "30 epochs of 421 steps on 54,000 train images; every 10th train image (6,000) is held out "
  "and the epoch with the lowest validation loss is kept (002 §6.1; its validation split's "
  "size is not stated; docs/spec.md §6.4). 002 says \"SGD\": momentum 0.9 with Nesterov is "
  "ShrinkBench's default for it; no weight decay is stated for LeNet. Keras' Glorot-uniform "
  "initialization where PyTorch's layers default to Kaiming-uniform.",
  "Pruning: MP one-shot from each parent, one global threshold with exact counts, the "
  "classifier left unpruned and the ratio counted over all parameters, as 002's released "
  "ShrinkBench code does (`--exclude_classifier --ratio_over=all`; docs/spec.md §6.1, §6.3).",
  "Fine-tuning: 15 epochs at LR 0.01, batch 128, the mask held after every step, the epoch "
  "with the lowest loss on the same 6,000 held-out images kept (epoch 0, right after "
  "pruning, is a candidate).",
  "Measures from the float32 TFLite file of each network (its predictions equal the Keras "
  "model's top-1 up to float rounding): per-class recall, α by OLS through the origin of B̄_t "
  "on B̄ over the ten classes (docs/spec.md §5.1-5.2).",
)


def _hours(paths):
  total = 0.0
  for path in paths:
    with open(path) as f:
      total += float(json.load(f).get("wall_time_s") or 0.0)
  return total / 3600


def kept(pruned):
  """{ratio: {"weights": mean kept of all parameters, layer: mean kept fraction}} over the
  pruned members' metadata (`pruning.compression.keep`, `sparsity.per_layer`)."""
  by_ratio = {}
  for path in pruned:
    with open(path) as f:
      meta = json.load(f)
    ratio = int(round(meta["pruning"]["asked"]["ratio"]))
    by_ratio.setdefault(ratio, []).append(meta)
  out = {}
  for ratio, metas in sorted(by_ratio.items()):
    layers = metas[0]["sparsity"]["per_layer"]
    out[str(ratio)] = dict(
      weights=float(sum(m["pruning"]["compression"]["keep"] for m in metas) / len(metas)),
      total=int(metas[0]["pruning"]["compression"]["total"]),
      **{
        layer: round(1 - sum(m["sparsity"]["per_layer"][layer] for m in metas) / len(metas), 6)
        for layer in layers
      },
    )
  return out


def facts(run_dir, members):
  """The run facts the page prints: command, members, compute hours, machine, stack, date, and
  what each ratio kept (`kept`)."""
  dense = sorted(glob.glob(os.path.join(run_dir, "members", "dense", "*", "metadata.json")))
  pruned = sorted(
    glob.glob(os.path.join(run_dir, "members", "oneshot_mp_r*", "*", "metadata.json"))
  )
  with open(dense[0]) as f:
    meta = json.load(f)
  machine = meta["machine"]
  versions = meta["versions"]
  last = max(os.path.getmtime(p) for p in dense + pruned)
  return {
    "command": COMMAND.format(members=members),
    "members": members,
    "train_hours": round(_hours(dense), 3),
    "finetune_hours": round(_hours(pruned), 3),
    "machine": f"{machine['cores']} cores ({machine['cpu']}, {machine['machine']}), CPU only",
    "versions": ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
    "date": pd.Timestamp(last, unit="s").strftime("%Y-%m-%d"),
    "protocol": list(PROTOCOL),
    "kept": kept(pruned),
  }


def _write(path, text):
  tmp = path + ".tmp"
  with open(tmp, "w") as f:
    f.write(text)
  os.replace(tmp, path)


def from_run(run_dir, out_dir):
  """Writes the CSV, the facts and the page of a finished run into `out_dir`."""
  from tf_forget.artifacts import names
  from tf_forget.report import collect

  variants = [names.DENSE] + [reproduction_002.variant_of(r) for r in reproduction_002.RATIOS]
  run = collect.load_run(run_dir, variants=variants, splits=["test"])
  table = reproduction_002.members_table(run)
  members = int((table.ratio == 1).sum())
  os.makedirs(out_dir, exist_ok=True)
  _write(os.path.join(out_dir, CSV), table.to_csv(index=False, float_format="%.6f"))
  run_facts = facts(run_dir, members)
  _write(os.path.join(out_dir, FACTS), json.dumps(run_facts, indent=1) + "\n")
  table = pd.read_csv(os.path.join(out_dir, CSV))  # the page is the committed CSV's page
  _write(os.path.join(out_dir, PAGE), reproduction_002.render(table, run_facts))


def page_of(out_dir):
  """The page the committed CSV and facts give."""
  with open(os.path.join(out_dir, FACTS)) as f:
    run_facts = json.load(f)
  return reproduction_002.render(pd.read_csv(os.path.join(out_dir, CSV)), run_facts)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("out_dir", help="where the CSV, facts and page are (docs/reproductions)")
  parser.add_argument("--run", help="a finished run of 002's protocol to read")
  parser.add_argument("--check", action="store_true", help="compare the page with the CSV's")
  args = parser.parse_args(argv)
  if args.run:
    from_run(args.run, args.out_dir)
    print(f"wrote {os.path.join(args.out_dir, PAGE)}")
  if args.check:
    with open(os.path.join(args.out_dir, PAGE)) as f:
      if f.read() != page_of(args.out_dir):
        print(f"{PAGE} differs from the page its CSV gives: rerun with --run", file=sys.stderr)
        return 1
    print(f"{PAGE} agrees with {CSV}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
