r"""The audit command (a thin binary over `tf_forget.api`).

  bazel run //eval:audit                       # embedded default: digits, offline
  bazel run //eval:audit -- --dataset=digits_biased
  bazel run //eval:audit -- --dataset=celeb_a  # the paper's protocol (needs the tfds data)
  bazel run //eval:audit -- --plan --dataset=imagenet2012  # its cost plan (no data needed)
  bazel run //eval:audit -- --pruning=oneshot --ratios=2,4,10,20,50  # 002: prune after training
  bazel run //eval:audit -- --dataset=cifar10 --robustness=published  # CIFAR-10-C, CIFAR-10.1
  bazel run //eval:audit -- --pruning=iterative --methods=wt,ft      # 003: prune-retrain cycles
  bazel run //eval:audit -- --pruning=iterative --robust_training    # 003 §6: robust (re)training
  bazel run //eval:audit -- --config=runs/digits/audit.json --out=/tmp/again  # a run again

The same command, installed with pip, is `tf-forget audit` (`tf_forget.commands`: the flags,
defined once in `tf_forget.commands.audit_flags`, and the command's body, `audit_command.run`).
The flags are read into one configuration (`tf_forget.config.flag_values`, `tf_forget.config.
tree.AuditConfig`); `--config=PATH` starts from a configuration file or a finished run's
`audit.json`, and the flags given replace its fields. The audit is `tf_forget.api.audit`.

Exit status: 0 when every gate passes, 3 when a gate fails, 1 on bad input (one line), 130 / 143
when interrupted by Ctrl-C / SIGTERM (finished work is kept: run the same command to resume).
TensorFlow's own output goes to <out>/logs/ (`--verbose`: the terminal); see `tf_forget.cli`.
"""

from tf_forget.cli import startup

if __name__ == "__main__":  # Ctrl-C / SIGTERM during the imports below: one line, 130 / 143
  startup.guard("audit")

from absl import flags

from tf_forget.cli import app as cli_app
from tf_forget.commands import audit_command
from tf_forget.commands import audit_flags

audit_flags.define(flags.FLAGS)
GATE_FAILED = audit_command.GATE_FAILED


def main(argv):
  del argv  # stray arguments are refused by `cli_app.run`
  return audit_command.run(flags.FLAGS, "audit")


def _help():
  """`--help`: the flags section by section (`audit_command.help_text`)."""
  return audit_command.help_text(flags.FLAGS, __doc__)


if __name__ == "__main__":
  cli_app.run(main, "audit", _help)
