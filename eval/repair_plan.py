"""The repairs an audit makes, checked before anything is written (issues #29, #37).

`fields` reads `--repair`, `--repair_always`, `--max_repair_size` and the gates of an
`audit_config.AuditConfig` for a `audit_plan.Plan` (its formats and, for the user's own
models, their references), as `eval.user_prune_plan` does for one-shot pruning; the repair
stages (`eval.repair_stages`) read them from the plan.
"""

import math

from eval import audit_config
from tf_forget.artifacts import names
from tflite_export import model_files


def fields(config, p):
  """The repair fields of the `Plan` `p` from `config`, checked: repair names, a full int8
  format to repair, `cle` only of tf_keras references (`tflite_export.equalization`), a size
  budget >= 1.

  Returns:
    {"repairs", "repair_always", "max_repair_size", "repair_gates"}.

  Raises:
    AuditError: an unknown repair, no full int8 format audited, or a bad budget.
  """
  repairs = config.repairs
  repairs = (repairs,) if isinstance(repairs, str) else repairs
  if not isinstance(repairs, (tuple, list)) or not all(map(names.repair_ok, repairs)):
    raise audit_config.AuditError(
        f"--repair must be repairs ({names.REPAIR_NAMES}), got {config.repairs!r}")
  repairs = names.sorted_repairs(repairs)
  if repairs and names.REPAIRED_FORMAT not in tuple(p.quantizations) + tuple(
      p.pruned_quantizations):
    raise audit_config.AuditError(
        f"--repair repairs full int8 files: add {names.REPAIRED_FORMAT} to "
        "--quantizations (or --compress)")
  if "cle" in repairs and config.user is not None:  # equalization clones tf_keras layers
    other = next(((r, k) for r in config.user.references
                  if (k := model_files.detect(r)) != "tf_keras"), None)
    if other is not None:
      raise audit_config.AuditError(
          f"--repair=cle needs tf_keras references: {other[0]} is a "
          f"{model_files.LOADERS[other[1]]} model (use --repair=auto, int16x8 or float<N>)")
  size = config.max_repair_size
  if isinstance(size, bool) or not isinstance(size, (int, float)) or not size >= 1.0 or \
      not math.isfinite(size):
    raise audit_config.AuditError(f"--max_repair_size must be a number >= 1, got {size!r}")
  return {"repairs": repairs, "repair_always": bool(config.repair_always),
          "max_repair_size": float(size), "repair_gates": config.gates}
