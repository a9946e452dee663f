"""The audit's flags as Python keywords: what `tf_forget.audit(**options)` runs.

Each keyword is read as the audit flag of its name (`tf_forget.commands.audit_flags`) on a
private `FlagValues`, after `tf_forget.commands.option_types` has checked its Python type, so
`tf_forget.audit(...)` and `tf-forget audit ...` take the same options and give the same
configuration.
"""

from absl import flags

from tf_forget.commands import audit_flags
from tf_forget.commands import option_types
from tf_forget.config import flag_values as flag_values_lib
from tf_forget.config import tree


def _option_args(options, multi):
  """Python keywords as command-line flags: True/False -> --x / --nox, a list or tuple ->
  --x=a,b (a repeatable flag: --x=a --x=b), a dict of --candidate -> --candidate=NAME=PATHS."""
  args = []
  for name, value in options.items():
    if value is None:
      continue
    if isinstance(value, bool):
      args.append(f"--{'' if value else 'no'}{name}")
    elif isinstance(value, dict):
      args += [
        f"--{name}={k}="
        + (option_types.text(v) if option_types.is_path(v) else ",".join(map(option_types.text, v)))
        for k, v in value.items()
      ]
    elif isinstance(value, (list, tuple)) and name in multi:
      args += [f"--{name}={v}" for v in value]
    elif isinstance(value, (list, tuple)):
      args.append(f"--{name}=" + ",".join(map(option_types.text, value)))
    else:
      args.append(f"--{name}={option_types.text(value)}")
  return args


def options_config(options, base=None):
  """The `AuditConfig` of Python keywords named like the audit's flags (`tf_forget.audit`).

  `options_config({"dataset": "folder:images", "reference": "model.keras", "candidate":
  {"int8": "int8.tflite"}, "out": "audit"})` is the configuration of
  `--dataset=folder:images --reference=model.keras --candidate=int8=int8.tflite --out=audit`;
  with `base`, the keywords replace its fields, as flags given with `--config` do.

  Raises:
    TypeError: a keyword that is no configuration flag, or a value of another kind than its
      flag takes (`option_types.check`).
    tree.AuditError: a value the flag or the configuration refuses (one line).
  """
  unknown = sorted(set(options) - set(audit_flags.config_flag_names()))
  if unknown:
    raise TypeError(
      f"unknown audit option{'s' if len(unknown) > 1 else ''} "
      f"{', '.join(unknown)} (the options are the audit's flags: tf-forget "
      "audit --help)"
    )
  fv = flags.FlagValues()
  audit_flags.define(fv)
  option_types.check(options, fv)
  try:
    fv(["tf_forget.audit", *_option_args(options, multi={"candidate"})])
  except flags.Error as e:
    raise tree.AuditError(" ".join(str(e).split())) from e
  config = flag_values_lib.config_from_flags(*audit_flags.values(fv), base=base)
  flag_values_lib.check(config)
  return config
