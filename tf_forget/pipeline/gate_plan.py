"""The gates an audit can evaluate, checked before anything is written (a plan step,
`tf_forget.pipeline.plan_steps`).

A subgroup gate (`--max_subgroup_fnr_increase`, docs/spec.md §4.2) that could never be evaluated
would fail every variant; `check_gates` refuses it, saying what to give. It is the step both kinds
of audit run once their data set is known (`trained_plan.STEPS`, `user_plan.STEPS`).
"""

from tf_forget.config import tree
from tf_forget.data import dataset_api
from tf_forget.data import sources
from tf_forget.pipeline import plan_steps
from tf_forget.policy import unlabelled_gates


def check_gates(gates, user, data, dataset):
  """Refuses a gate of the `gates_lib.Gates` that could never be evaluated: one that needs labels
  on data without them, or one without labels on labelled data (`unlabelled_gates.check`); a
  subgroup gate of a task that
  is not binary (the FNR of a subgroup needs a positive class, docs/spec.md §4.2), or no protected
  attributes.

  Args:
    gates: the `gates_lib.Gates` section.
    user: the `tree.UserModels`, or None (a trained audit).
    data: the `tree.Data` section (`--dataset` as spelled).
    dataset: the audited `dataset_api.Dataset`.

  Raises:
    AuditError: one line saying what to give.
  """
  unlabelled_gates.check(gates, dataset_api.unlabelled(dataset.spec.options))
  if gates.max_subgroup_fnr_increase is None:
    return
  spec, gate = dataset.spec, "--max_subgroup_fnr_increase"
  users = user is not None and str(data.dataset).partition(":")[0] in sources.PREFIXES
  if not users and not spec.protected_attributes:
    raise tree.AuditError(
      f"{gate} gates protected subgroups, but {spec.name} has no protected attributes to gate"
    )
  if spec.num_classes != 2:
    raise tree.AuditError(
      f"{gate} gates the false-negative rate of protected subgroups, which needs a binary "
      f"task (positive = class 1): {spec.name} has {spec.num_classes} classes"
    )
  if spec.protected_attributes:
    return
  given = ", ".join(spec.attribute_names[:8]) + (", ..." if len(spec.attribute_names) > 8 else "")
  if spec.attribute_names:
    of = f"attributes CSV {user.attributes}" if user.attributes else spec.name
    raise tree.AuditError(
      f"{gate} gates protected subgroups: it needs --protected=ATTR[,ATTR] naming "
      f"attributes of {of} (attributes: {given})"
    )
  raise tree.AuditError(
    f"{gate} gates protected subgroups: it needs --attributes=CSV (a column 'path' or 'id', "
    "then one column per attribute) and --protected=ATTR[,ATTR] naming its columns"
  )


STEP = plan_steps.Step(check_gates, reads=("gates", "user", "data"), needs=("dataset",))
