"""The `evaluate_population` command: its flags and its body (`eval/evaluate_population.py` is
the thin binary; tests run `run` in-process without importing a binary).

`define(flag_values)` defines the flags on an absl `FlagValues`; `run(flag_values)` evaluates
every exported TFLite file of a population run (`tf_forget.evaluate.population_eval`) and prints
the per-variant agreement table; `HELP_SECTIONS` orders `--help` (`cli_app.sectioned_help`).
"""

from absl import app
from absl import flags
from absl import logging

from tf_forget.artifacts import errors
from tf_forget.artifacts import filesystem
from tf_forget.cli import app as cli_app
from tf_forget.cli import console
from tf_forget.compat import cpu_kernels
from tf_forget.compat import keras2

NAME = "evaluate_population"

# --help, section by section (every flag of `define` and --verbose under one title).
HELP_SECTIONS = (
  ("what to read and write", ["run_dir", "dataset", "splits", "variants", "overwrite", "verbose"]),
  ("how the files run", ["batch_size", "num_threads", "tail"]),
  ("what is kept and compared", ["save_logits", "check_keras"]),
)


def define(flag_values):
  """Defines the command's flags on `flag_values` (an absl `FlagValues`)."""
  fv = {"flag_values": flag_values}
  flags.DEFINE_string("run_dir", None, "Population run directory (with tflite/).", **fv)
  flags.DEFINE_string("dataset", None, "Registry data set; default: the members'.", **fv)
  flags.DEFINE_list("splits", None, "Data splits; default: the data set's eval split.", **fv)
  flags.DEFINE_list(
    "variants",
    None,
    "Audited variant names to evaluate; default all exported (docs/spec.md §1.1).",
    **fv,
  )
  flags.DEFINE_integer("batch_size", 256, "Interpreter batch size B.", lower_bound=1, **fv)
  flags.DEFINE_integer("num_threads", 2, "Interpreter threads.", lower_bound=1, **fv)
  flags.DEFINE_bool("save_logits", True, "Store dequantized logits too.", **fv)
  flags.DEFINE_bool("check_keras", True, "Compare with the Keras models too.", **fv)
  flags.DEFINE_bool("overwrite", False, "Recompute existing predictions.", **fv)
  flags.DEFINE_enum(
    "tail",
    "resize",
    ["resize", "pad"],
    "Last partial batch: resize the input once, or pad to B.",
    **fv,
  )


def _table(summary, title):
  lines = [
    title,
    f"{'variant':28s} {'members':>7s} {'min top-1':>9s} {'mean top-1':>10s} "
    f"{'max |dlogit|':>12s} {'mean |dlogit|':>13s}",
  ]
  for variant, s in summary.items():
    fmt = lambda v: "n/a" if v is None else f"{v:.3g}"
    lines.append(
      f"{variant:28s} {s['members']:7d} {s['min_top1_agreement']:9.4f} "
      f"{s['mean_top1_agreement']:10.4f} {fmt(s['max_abs_logit_error']):>12s} "
      f"{fmt(s['mean_abs_logit_error']):>13s}"
    )
  return "\n".join(lines)


def run(fv):
  """The command over the parsed flags `fv`; returns the exit status (0, or 1 on bad input).

  Raises:
    app.UsageError: a missing or bad --run_dir (one line).
  """
  keras2.enable()
  cpu_kernels.configure()
  logging.set_verbosity(logging.WARNING)  # TensorFlow logs every SavedModel it writes
  if not fv.run_dir:
    raise app.UsageError("--run_dir is required")
  run_dir = filesystem.user_path(fv.run_dir)
  if not filesystem.isdir(run_dir):
    raise app.UsageError(f"--run_dir {run_dir} is not a directory")
  # TensorFlow only after Keras 2 is selected
  from tf_forget.data import registry
  from tf_forget.evaluate import population_eval

  try:
    dataset = registry.get(fv.dataset) if fv.dataset else None
    with cli_app.locked_run_dir(run_dir, NAME, check_ours=False):
      tables = population_eval.evaluate_population(
        run_dir,
        dataset=dataset,
        splits=fv.splits,
        batch_size=fv.batch_size,
        num_threads=fv.num_threads,
        save_logits=fv.save_logits,
        check_keras=fv.check_keras,
        variants=fv.variants,
        overwrite=fv.overwrite,
        log=print,
        tail=fv.tail,
      )
  except errors.Error as e:  # bad input or artifact: one line (a bug keeps its traceback)
    console.error(f"{NAME}: error: {errors.one_line(e, 1000)}")
    return 1
  for split, table in tables.items():
    print(_table(table["summary_vs_float32_tflite"], f"[{split}] vs float32 TFLite"))
    if table["summary_vs_keras"]:
      print(_table(table["summary_vs_keras"], f"[{split}] vs Keras"))
  return 0
