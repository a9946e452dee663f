"""The audit's flags, defined once for every way an audit is started.

`define(flag_values)` defines them on an absl `FlagValues`: the global one for the commands
(`eval/audit.py`, i.e. `bazel run //eval:audit`, and `tf-forget audit` / `tf-forget plan`,
`tf_forget.commands.tf_forget_main`), so both take exactly the same flags; a private one for
`tf_forget.audit(**options)`, whose keywords are read as these flags
(`tf_forget.commands.audit_options`).
`values(flag_values)` gives what `tf_forget.config.flag_values.config_from_flags` reads;
`HELP_SECTIONS` orders `--help` (`tf_forget.commands.audit_command.help_text`) by the sections
of `tf_forget.commands.flag_sections`, where each flag is defined with its help text.

Flags that are not part of the configuration (`COMMAND_FLAGS`): `--config`, `--plan`,
`--unit_costs`, `--summary` (and `--verbose`, `tf_forget.cli.app`'s).
"""

import functools

from absl import flags

from tf_forget.commands import flag_sections

COMMAND_FLAGS = ("config", "plan", "unit_costs", "summary", "verbose")


class _On:
  """`on.string(name, default, help)` = `flags.DEFINE_string(..., flag_values=<the one>)`."""

  def __init__(self, flag_values):
    self._flag_values = flag_values
    self.defined = []

  def __getattr__(self, kind):
    define = getattr(flags, f"DEFINE_{kind}")

    def call(name, *args, **kwargs):
      self.defined.append(name)
      return define(name, *args, flag_values=self._flag_values, **kwargs)

    return call


def define(flag_values):
  """Defines every flag of the audit on `flag_values` (an absl `FlagValues`), section by
  section (`flag_sections.SECTIONS`).

  Returns:
    The flags' names, in definition order.
  """
  on = _On(flag_values)
  for _, section in flag_sections.SECTIONS:
    section(on)
  return tuple(on.defined)


def define_summary(flag_values):
  """Defines `--summary` (the audit's and `tf-forget report`'s) on `flag_values` (or `_On`)."""
  flag_sections.summary(flag_values if isinstance(flag_values, _On) else _On(flag_values))


def define_report_trust(flag_values):
  """Defines `tf-forget report`'s `--trust_model_code` and `--preprocess`: what lets the run's
  recorded code run, said again on the command line (a run's audit.json cannot allow it)."""
  on = flag_values if isinstance(flag_values, _On) else _On(flag_values)
  on.bool(
    "trust_model_code",
    False,
    "The run was made with --trust_model_code: its model's "
    "own Python code runs again while the report is written. Without it such a run is "
    "refused in one line.",
  )
  on.string(
    "preprocess",
    None,
    "The run was made with --preprocess=MODULE:FUNCTION: give the "
    "same value to let that module run again. Without it such a run is refused in one "
    "line.",
  )


def _names(section):
  """The flags `section` defines (on a scratch `FlagValues`)."""
  on = _On(flags.FlagValues())
  section(on)
  return on.defined


# --help, section by section: each section's title and the flags it defines, in order, and
# --verbose (the command line's own) with the first.
HELP_SECTIONS = tuple(
  (title, list(_names(section)) + (["verbose"] if i == 0 else []))
  for i, (title, section) in enumerate(flag_sections.SECTIONS)
)


@functools.lru_cache(maxsize=None)
def flag_names():
  """The names `define` defines (read from a scratch `FlagValues`)."""
  return define(flags.FlagValues())


def config_flag_names():
  """The flags `config_from_flags` reads: every flag of `define` but the `COMMAND_FLAGS`."""
  return [f for f in flag_names() if f not in COMMAND_FLAGS]


def values(flag_values):
  """({flag: value} of every configuration flag of `flag_values`, the flags given)."""
  fv = flag_values
  given = lambda f: fv[f].present or not fv[f].using_default_value
  config_flags = config_flag_names()
  return {f: fv[f].value for f in config_flags}, {f for f in config_flags if given(f)}
