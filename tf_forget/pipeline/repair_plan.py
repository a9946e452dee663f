"""The repairs an audit makes, checked before anything is written.

`fields` reads the `tree.Repair` section (`--repair`, `--repair_always`, `--max_repair_size`),
the gates and the user's models of an audit's configuration, and the formats the plan audits: it is
the last plan step of both kinds of audit (`STEP`, `tf_forget.pipeline.plan_steps`). The repair
stages (`tf_forget.pipeline.repair_stages`) read its fields from the plan. The names and the budget
are checked by `tree.AuditConfig.validate` (`tf_forget.config.checks`).
"""

from tf_forget.artifacts import names
from tf_forget.config import tree
from tf_forget.export import model_files
from tf_forget.pipeline import plan_steps


def fields(repair, gates, user, quantizations, pruned_quantizations):
  """The repair fields of the plan from a `tree.Repair`, the audit's `gates_lib.Gates`, its
  `tree.UserModels` (or None) and the formats it audits, checked: a full int8 format to repair,
  `cle` only of tf_keras references (`tf_forget.export.equalization`).

  Returns:
    {"repairs", "repair_always", "max_repair_size", "repair_gates"}.

  Raises:
    AuditError: no full int8 format audited, or `cle` of a Keras 3 or SavedModel reference.
  """
  repairs = names.sorted_repairs(repair.repairs)
  if repairs and names.REPAIRED_FORMAT not in tuple(quantizations) + tuple(pruned_quantizations):
    raise tree.AuditError(
      f"--repair repairs full int8 files: add {names.REPAIRED_FORMAT} to "
      "--quantizations (or --compress)"
    )
  if "cle" in repairs and user is not None:  # equalization clones tf_keras layers
    other = next(
      ((r, k) for r in user.references if (k := model_files.detect(r)) != "tf_keras"), None
    )
    if other is not None:
      raise tree.AuditError(
        f"--repair=cle needs tf_keras references: {other[0]} is a "
        f"{model_files.LOADERS[other[1]]} model (use --repair=auto, int16x8 or float<N>)"
      )
  return {
    "repairs": repairs,
    "repair_always": bool(repair.always),
    "max_repair_size": float(repair.max_size),
    "repair_gates": gates,
  }


STEP = plan_steps.Step(
  fields,
  reads=("repair", "gates", "user"),
  needs=("quantizations", "pruned_quantizations"),
  makes=("repairs", "repair_always", "max_repair_size", "repair_gates"),
)
