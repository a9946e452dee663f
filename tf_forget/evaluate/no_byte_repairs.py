"""Repairs of a forgetting full int8 file that cost no bytes, each a variant.

  * `full_int8~cle`: the member's float model equalized across layers before conversion
    (`tf_forget.export.equalization`; Nagel et al. 2019 §4.1): the same float function, channels
    whose ranges differ by orders of magnitude brought to the same range, so that a per-tensor
    int8 activation scale no longer leaves most channels a few levels. Converted as
    `full_int8` with the same representative images.
  * `full_int8~int16x8`: 16-bit activations, 8-bit weights (TFLite's
    `EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8`, int16 input / output;
    `tf_forget.export.formats.options`): 256x finer activation steps at the weights' size; the
    conversion fails for a model with an op that has no int16 kernel (one line naming it).

Unlike `full_int8~float<N>` (`tf_forget.evaluate.repairs.repair`), neither depends on the layer
analysis: their lineage is the member's model and the representative images.
"""

import time

from tf_forget.artifacts import errors
from tf_forget.artifacts import names
from tf_forget.export import converter
from tf_forget.export import equalization
from tf_forget.export import export
from tf_forget.export import export_state
from tf_forget.export import flatbuffer


class RepairError(errors.Error):
  """A repair that cannot be made (one line)."""


def convert(model, kind, representative_images):
  """(the `.tflite` bytes of repair `kind` ("cle" / "int16x8") of a float model, the
  equalization record or None).

  Raises:
    RepairError: not such a repair, or a conversion that fails.
  """
  if kind not in names.NO_BYTE_REPAIRS:
    raise RepairError(
      f"{kind!r} is not a repair that costs no bytes ({', '.join(names.NO_BYTE_REPAIRS)})"
    )
  record = None
  try:
    if kind == "cle":
      model, record = equalization.equalize(model)
    return converter.convert(model, names.repair_format(kind), representative_images), record
  except (converter.ConversionError, equalization.EqualizationError) as e:
    raise RepairError(f"{names.repair_format(kind)}: {errors.one_line(e, 300)}") from e


def make(run_dir, variant, k, dataset, inputs):
  """Converts the repaired file `variant` (`full_int8~cle` or `full_int8~int16x8`) of member
  k; returns its export JSON dict.

  Args:
    inputs: its lineage inputs (`tf_forget.evaluate.repairs.repair_inputs`: the model's and the
      representative images' digests).

  Raises:
    RepairError: not such a format, or a conversion that fails.
  """
  kind = names.repair_kind(variant.format)
  if kind not in names.NO_BYTE_REPAIRS:
    raise RepairError(
      f"{variant.name} is not a repair that costs no bytes "
      f"({', '.join(map(names.repair_format, names.NO_BYTE_REPAIRS))})"
    )
  mv = variant.member_variant
  model, metadata = export_state.load_member(run_dir, mv, k)
  rep = export_state.representative_images(dataset)
  start = time.time()
  try:
    data, record = convert(model, kind, rep.images)
  except RepairError as e:
    raise RepairError(f"{mv}/{k} {e}") from e
  meta = export.export_json(
    variant,
    k,
    data,
    flatbuffer.weight_stats(data),
    metadata,
    inputs["model"],
    {"repair": kind},
    time.time() - start,
    rep,
  )
  meta["repair"] = {"kind": kind, "equalization": record}
  meta["inputs"] = inputs
  return export.write_variant(run_dir, variant, k, data, meta)
