"""The `generate_corruptions` command: its flags and its body
(`tf_forget/corruptions/generate_corruptions.py` is the thin binary; tests run `run` in-process
without importing a binary).

`define(flag_values)` defines the flags on an absl `FlagValues`; `run(flag_values)` fills the
corrupted-split cache (`tf_forget.corruptions.cache.fill`); `HELP_SECTIONS` orders `--help`.
"""

from absl import app
from absl import flags

from tf_forget.artifacts import errors
from tf_forget.artifacts import filesystem
from tf_forget.cli import app as cli_app
from tf_forget.corruptions import cache
from tf_forget.corruptions import corruption_registry
from tf_forget.corruptions import tables

NAME = "generate_corruptions"

# --help, section by section (every flag of `define` and --verbose under one title).
HELP_SECTIONS = (
  (
    "what to read and write",
    ["dataset", "data_dir", "image_size", "split", "cache_dir", "overwrite", "verbose"],
  ),
  ("what to make", ["corruptions", "severities", "table", "base_seed"]),
  ("how the work runs", ["batch_size", "processes"]),
)


def define(flag_values):
  """Defines the command's flags on `flag_values` (an absl `FlagValues`)."""
  fv = {"flag_values": flag_values}
  flags.DEFINE_string("dataset", None, "Data set registry name.", **fv)
  flags.DEFINE_string("data_dir", None, "tfds data directory (tfds data sets).", **fv)
  flags.DEFINE_list("image_size", None, "H,W to resize to (data sets that take it).", **fv)
  flags.DEFINE_string("cache_dir", None, "Root of the corrupted-split cache.", **fv)
  flags.DEFINE_string("split", None, "Clean split to corrupt (default: the eval split).", **fv)
  flags.DEFINE_list(
    "corruptions",
    list(corruption_registry.CORRUPTIONS),
    "Corruption names (default: all 19).",
    **fv,
  )
  flags.DEFINE_list("severities", ["1", "2", "3", "4", "5"], "Severities 1..5.", **fv)
  flags.DEFINE_enum(
    "table", None, list(tables.FAMILIES), "Severity table (default: the image-size family).", **fv
  )
  flags.DEFINE_integer(
    "base_seed", 0, "Replicate seed (part of the cache key).", lower_bound=0, **fv
  )
  flags.DEFINE_integer("batch_size", 1000, "Examples per shard.", lower_bound=1, **fv)
  flags.DEFINE_integer(
    "processes", 0, "Worker processes (0: in this process).", lower_bound=0, **fv
  )
  flags.DEFINE_bool("overwrite", False, "Regenerate complete entries too.", **fv)
  flags.register_validator("image_size", cli_app.image_size_ok, cli_app.IMAGE_SIZE_MESSAGE, **fv)


def _jobs(corruptions, severities):
  """Validated (corruption, severity) pairs; raises app.UsageError naming the bad value."""
  jobs = []
  for text in severities:
    if not text.strip().isdigit() or int(text) not in tables.SEVERITIES:
      raise app.UsageError(f"--severities must be integers in 1..5, got {text!r}")
  for name in corruptions:
    if name not in corruption_registry.CORRUPTIONS:
      raise app.UsageError(
        f"unknown corruption {name!r} (known: {', '.join(corruption_registry.CORRUPTIONS)})"
      )
    jobs.extend((name, int(s)) for s in severities)
  return jobs


def run(fv):
  """The command over the parsed flags `fv`.

  Raises:
    app.UsageError: a missing flag, a bad value, or a data set, corruption or cache error
      (one line).
  """
  if not fv.dataset or not fv.cache_dir:
    raise app.UsageError("--dataset and --cache_dir are required")
  jobs = _jobs(fv.corruptions, fv.severities)
  options = {"data_dir": filesystem.user_path(fv.data_dir)}
  cache_dir = filesystem.user_path(fv.cache_dir)
  if fv.image_size:
    options["image_size"] = tuple(int(v) for v in fv.image_size)
  from tf_forget.data import registry as data_registry

  try:
    dataset = data_registry.get(fv.dataset, **options)
    split = fv.split or dataset.spec.eval_split
    keys = cache.fill(
      dataset,
      split,
      jobs,
      cache_dir,
      table=fv.table,
      base_seed=fv.base_seed,
      batch_size=fv.batch_size,
      processes=fv.processes,
      overwrite=fv.overwrite,
    )
  except errors.Error as e:  # DataError / CorruptionError / WriteError: one line, exit 1
    raise app.UsageError(errors.one_line(e, 1000)) from e
  print(
    f"generated {len(keys)} of {len(jobs)} corrupted splits of {fv.dataset}/{split} in {cache_dir}"
  )
