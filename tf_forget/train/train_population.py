r"""Trains a population of dense and pruned members (thin binary over `population`).

  bazel run //tf_forget/train:train_population -- --run_dir=/tmp/run --dataset=digits

`--preset` defaults to the data set's protocol preset (`tf_forget.data.protocols`):
`--dataset=celeb_a` trains 004's CelebA protocol, not the digits one. With neither flag: digits;
with `--preset` only: the preset's data set.

Re-running skips finished members and resumes interrupted ones. The flags and
the body are `tf_forget.commands.train_population_command`'s.
"""

from tf_forget.cli import app as cli_app
from tf_forget.commands import train_population_command

if __name__ == "__main__":
  cli_app.run_command(train_population_command, __doc__)
