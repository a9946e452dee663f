r"""Fills the corrupted-split cache for a data set (issue #5; schema docs/artifacts/corruptions.md).

    python -m tf_forget.corruptions.generate_corruptions --dataset=digits \
        --cache_dir=/tmp/corruptions [--corruptions=glass_blur,fog] [--severities=3] \
        [--split=test] [--table=32] [--base_seed=0] [--processes=2]

Generates `<corruption>@<severity>` (SPEC §1.1) of the data set's eval split (or `--split`) for
every requested corruption and severity, skipping complete entries unless `--overwrite`. The
evaluator reads them through `tf_forget.corruptions.cache.CorruptedDataset`.
"""

from absl import app
from absl import flags

from tf_forget.artifacts import errors
from tf_forget.artifacts import filesystem
from tf_forget.cli import app as cli_app
from tf_forget.corruptions import cache
from tf_forget.corruptions import corruption_registry
from tf_forget.corruptions import tables

_DATASET = flags.DEFINE_string("dataset", None, "Data set registry name.")
_DATA_DIR = flags.DEFINE_string("data_dir", None, "tfds data directory (tfds data sets).")
_IMAGE_SIZE = flags.DEFINE_list("image_size", None, "H,W to resize to (data sets that take it).")
_CACHE_DIR = flags.DEFINE_string("cache_dir", None, "Root of the corrupted-split cache.")
_SPLIT = flags.DEFINE_string("split", None, "Clean split to corrupt (default: the eval split).")
_CORRUPTIONS = flags.DEFINE_list("corruptions", list(corruption_registry.CORRUPTIONS),
                                 "Corruption names (default: all 19).")
_SEVERITIES = flags.DEFINE_list("severities", ["1", "2", "3", "4", "5"], "Severities 1..5.")
_TABLE = flags.DEFINE_enum("table", None, list(tables.FAMILIES),
                           "Severity table (default: the image-size family).")
_BASE_SEED = flags.DEFINE_integer("base_seed", 0, "Replicate seed (part of the cache key).",
                                  lower_bound=0)
_BATCH_SIZE = flags.DEFINE_integer("batch_size", 1000, "Examples per shard.", lower_bound=1)
_PROCESSES = flags.DEFINE_integer("processes", 0, "Worker processes (0: in this process).",
                                  lower_bound=0)
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "Regenerate complete entries too.")
flags.register_validator("image_size", cli_app.image_size_ok, cli_app.IMAGE_SIZE_MESSAGE)


def _jobs(corruptions, severities):
  """Validated (corruption, severity) pairs; raises app.UsageError naming the bad value."""
  jobs = []
  for text in severities:
    if not text.strip().isdigit() or int(text) not in tables.SEVERITIES:
      raise app.UsageError(f"--severities must be integers in 1..5, got {text!r}")
  for name in corruptions:
    if name not in corruption_registry.CORRUPTIONS:
      raise app.UsageError(f"unknown corruption {name!r} (known: {', '.join(corruption_registry.CORRUPTIONS)})")
    jobs.extend((name, int(s)) for s in severities)
  return jobs


def main(argv):
  del argv  # stray arguments are refused by `cli_app.run`
  if not _DATASET.value or not _CACHE_DIR.value:
    raise app.UsageError("--dataset and --cache_dir are required")
  jobs = _jobs(_CORRUPTIONS.value, _SEVERITIES.value)
  options = {"data_dir": filesystem.user_path(_DATA_DIR.value)}
  cache_dir = filesystem.user_path(_CACHE_DIR.value)
  if _IMAGE_SIZE.value:
    options["image_size"] = tuple(int(v) for v in _IMAGE_SIZE.value)
  from tf_forget.data import registry as data_registry  # pylint: disable=g-import-not-at-top
  try:
    dataset = data_registry.get(_DATASET.value, **options)
    split = _SPLIT.value or dataset.spec.eval_split
    keys = cache.fill(dataset, split, jobs, cache_dir, table=_TABLE.value,
                      base_seed=_BASE_SEED.value, batch_size=_BATCH_SIZE.value,
                      processes=_PROCESSES.value, overwrite=_OVERWRITE.value)
  except errors.Error as e:  # DataError / CorruptionError / WriteError: one line, exit 1
    raise app.UsageError(errors.one_line(e, 1000)) from e
  print(f"generated {len(keys)} of {len(jobs)} corrupted splits of {_DATASET.value}/{split} "
        f"in {cache_dir}")


# --help, section by section (every flag of this file and --verbose under one title).
HELP_SECTIONS = (
    ("what to read and write", ["dataset", "data_dir", "image_size", "split", "cache_dir",
                                "overwrite", "verbose"]),
    ("what to make", ["corruptions", "severities", "table", "base_seed"]),
    ("how the work runs", ["batch_size", "processes"]),
)


def _help():
  """`--help`: `HELP_SECTIONS` with each flag's help and default (`cli_app.sectioned_help`).

  Raises:
    AssertionError: a flag of this file or --verbose in no section (a bug here, said loudly).
  """
  return cli_app.sectioned_help(__doc__, HELP_SECTIONS, flags.FLAGS, __name__)


if __name__ == "__main__":
  cli_app.run(main, "generate_corruptions", _help)
