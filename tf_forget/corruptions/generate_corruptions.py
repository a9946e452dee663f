r"""Fills the corrupted-split cache for a data set (schema docs/artifacts/corruptions.md).

    python -m tf_forget.corruptions.generate_corruptions --dataset=digits \
        --cache_dir=/tmp/corruptions [--corruptions=glass_blur,fog] [--severities=3] \
        [--split=test] [--table=32] [--base_seed=0] [--processes=2]

Generates `<corruption>@<severity>` (docs/spec.md §1.1) of the data set's eval split (or `--split`)
for every requested corruption and severity, skipping complete entries unless `--overwrite`. The
evaluator reads them through `tf_forget.corruptions.corrupted_split.CorruptedDataset`. The flags and
the body are `tf_forget.commands.generate_corruptions_command`'s.
"""

from tf_forget.cli import app as cli_app
from tf_forget.commands import generate_corruptions_command

if __name__ == "__main__":
  cli_app.run_command(generate_corruptions_command, __doc__)
