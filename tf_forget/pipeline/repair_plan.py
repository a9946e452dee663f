"""The repairs an audit makes, checked before anything is written (issues #29, #37).

`fields` reads the `tree.Repair` section (`--repair`, `--repair_always`, `--max_repair_size`) and
the gates of an audit's configuration for its `audit_plan.Plan` (its formats and, for the user's own
models, their references), as `tf_forget.pipeline.user_prune_plan` does for one-shot pruning; the
repair stages (`tf_forget.pipeline.repair_stages`) read them from the plan. The names and the budget
are checked by `tree.AuditConfig.validate` (`tf_forget.config.checks`).
"""

from tf_forget.artifacts import names
from tf_forget.config import tree
from tf_forget.export import model_files


def fields(repair, gates, p):
  """The repair fields of the `Plan` `p` from a `tree.Repair` and the audit's
  `gates_lib.Gates`, checked: a full int8 format to repair, `cle` only of tf_keras references
  (`tf_forget.export.equalization`).

  Returns:
    {"repairs", "repair_always", "max_repair_size", "repair_gates"}.

  Raises:
    AuditError: no full int8 format audited, or `cle` of a Keras 3 or SavedModel reference.
  """
  repairs = names.sorted_repairs(repair.repairs)
  if repairs and names.REPAIRED_FORMAT not in tuple(p.quantizations) + tuple(
      p.pruned_quantizations):
    raise tree.AuditError(
        f"--repair repairs full int8 files: add {names.REPAIRED_FORMAT} to "
        "--quantizations (or --compress)")
  if "cle" in repairs and p.user is not None:  # equalization clones tf_keras layers
    other = next(((r, k) for r in p.user.references
                  if (k := model_files.detect(r)) != "tf_keras"), None)
    if other is not None:
      raise tree.AuditError(
          f"--repair=cle needs tf_keras references: {other[0]} is a "
          f"{model_files.LOADERS[other[1]]} model (use --repair=auto, int16x8 or float<N>)")
  return {"repairs": repairs, "repair_always": bool(repair.always),
          "max_repair_size": float(repair.max_size), "repair_gates": gates}
