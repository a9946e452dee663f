"""Classes and ops named as the report shows them.

* `class_label`: a class once when its name is its index ("3", not "3 (3)");
* `shown_label`: a stored label name as `class_label` shows it;
* `op_label`: an op named so that two ops of a type differ: `CONV_2D #2 (sequential/conv2d_1)`
  (the op's rank among the file's ops of that type, `op_ordinals`, and the layer its output
  tensor belongs to, `layer_scope`).

Standard library only.
"""


def class_label(index, name=None):
  """'3' when the class name is its index (or absent), else 'cat (3)'."""
  index = int(index)
  if name is None or str(name) == str(index):
    return str(index)
  return f"{name} ({index})"


def shown_label(label_name, index):
  """A stored `label_name` ('3 (3)', 'cat (3)') as `class_label` shows it."""
  text, suffix = str(label_name), f" ({int(index)})"
  name = text[: -len(suffix)] if text.endswith(suffix) else text
  return class_label(index, name)


def layer_scope(tensor_name):
  """The layer an op's output tensor belongs to: 'sequential/conv2d_1' of
  'sequential/conv2d_1/Relu;sequential/conv2d_1/BiasAdd;...'; "" for a name without a layer
  path (a graph output such as 'StatefulPartitionedCall:0')."""
  if not tensor_name:
    return ""
  first = str(tensor_name).split(";")[0]
  return first.rsplit("/", 1)[0] if "/" in first else ""


def op_ordinals(rows):
  """{op_index: (rank among the ops of its type, ops of that type)} of a file's analysed ops.

  Args:
    rows: dicts with `op_name` and `op_index` (a layer analysis's `rows`, in any order).
  """
  by_type = {}
  for r in rows:
    if r.get("op_index") is None:
      continue
    by_type.setdefault(r["op_name"], set()).add(int(r["op_index"]))
  out = {}
  for indices in by_type.values():
    for rank, i in enumerate(sorted(indices), start=1):
      out[i] = (rank, len(indices))
  return out


def op_label(op_name, tensor_name=None, ordinal=None):
  """'CONV_2D #2 (sequential/conv2d_1)': the op, its rank among the file's ops of its type
  when there are several (`ordinal` = (rank, count), `op_ordinals`), and its layer."""
  text = str(op_name)
  if ordinal is not None and ordinal[1] > 1:
    text += f" #{ordinal[0]}"
  scope = layer_scope(tensor_name)
  return f"{text} ({scope})" if scope else text
