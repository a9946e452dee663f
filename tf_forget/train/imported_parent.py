"""An imported member as the parent of one-shot members (`--pruning=oneshot`).

The user's reference imported as dense member k (`tf_forget.train.imported`) is pruned after
training like a trained member (`tf_forget.prune`; docs/spec.md §6). What the pruning code needs of
such a parent, in one place:
  * what the pruning code reads of a member's training preset is `preset(weight_decay)`, the
    "user" preset: ε of UP = 2λ (docs/spec.md §6.1) with λ the reference's own weight decay
    (`trainable`), augmentation "none" (the user's augmentation is unknown: fine-tuning and g
    read the images as they are), no robust training, float32; its batch size is the one-shot
    schedule's ("user", `tf_forget.prune.oneshot_schedule`), steps 0 (nothing is trained here);
    seeds are the member seeds of (population seed 0, data set, model "user", variant, k)
    (`member_config.MemberConfig.seed`), as for a trained population;
  * "a compiled model" (`trainable`): the pruning code's data loss is the mean sparse
    categorical cross-entropy of the logits (docs/spec.md §6.2, §6.4), so the reference must be
    saved compiled with `SparseCategoricalCrossentropy(from_logits=True)`; any other loss or none is
    refused in one line naming what was found, and so is an audited output made by a softmax
    (a softmax activation or layer: probabilities, whatever the loss says). Softmax outputs are
    refused rather than supported: the pruning code computes its data loss (g, the fine-tuning
    and its epoch selection) on logits in one place for every parent; probabilities would need
    a second loss path through it (Keras' cross-entropy of probabilities clips them to
    [1e-7, 1 − 1e-7] unless it can trace the softmax back to its logits), recorded and tested
    per parent. The refusal says how to save such a model: logits out, compiled from_logits;
  * its status as a parent (`member_status`): an imported member is current when
    `imported.status` holds for the reference file at the path its metadata records (the
    file's sha256 and the saved `model.keras`); a trained parent keeps `member_files.status`
    against its config.
"""

import os

from tf_forget.artifacts import errors
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import layout
from tf_forget.artifacts import lineage
from tf_forget.compat import keras2
from tf_forget.data import input_layout
from tf_forget.train import imported
from tf_forget.train import member_files
from tf_forget.train import model_code
from tf_forget.train import presets
from tf_forget.train import pruning

PRESET = "user"  # its preset's name, and its one-shot schedule's (`protocols/user_protocol.py`)
PRESET_BATCH_SIZE = 128  # the "user" one-shot schedule's batch size
# The attributes holding the regularizers of the prunable kernels (`pruning.prunable_kernels`).
_REGULARIZERS = ("kernel_regularizer", "depthwise_regularizer", "pointwise_regularizer")


def preset(weight_decay=0.0):
  """The training preset of an imported member, as one-shot pruning reads it (see the module
  docstring): `weight_decay` is λ of the reference (ε of UP = 2λ)."""
  return presets.Preset(
    name=PRESET,
    dataset=imported.MODEL,
    model=imported.MODEL,
    steps=0,
    batch_size=PRESET_BATCH_SIZE,
    learning_rate=0.0,
    lr_boundaries=(),
    weight_decay=float(weight_decay),
    augmentation="none",
    sparsities=(),
    members=1,
    checkpoint_every=1,
  )


def _compiled(path, trust_model_code=False):
  """The reference loaded with its compile config (loss, optimizer; `imported.load`)."""
  if not trust_model_code:
    model_code.check(path, compiled=True)
  try:
    return keras2.keras().models.load_model(path, compile=True, safe_mode=not trust_model_code)
  except Exception as e:  # Keras raises anything on bad files
    raise imported.ReferenceModelError(
      f"cannot load reference {path} compiled (its loss and "
      f"optimizer) with tf_keras: {errors.one_line(e)}"
    ) from e


def _output_loss(model, output_index):
  """The compiled loss of the audited output (a list or dict of losses: that output's)."""
  loss = model.loss
  index = output_index or 0
  if isinstance(loss, (list, tuple)):
    return loss[index] if index < len(loss) else None
  if isinstance(loss, dict):
    return loss.get(model.output_names[index])
  return loss


def _describe_loss(loss):
  """How a refusal names a compiled loss: "SparseCategoricalCrossentropy(from_logits=False)"."""
  if isinstance(loss, keras2.keras().losses.Loss):
    return f"{type(loss).__name__}(from_logits={loss.get_config().get('from_logits')})"
  if isinstance(loss, str):
    return f"{loss!r} (a loss named by a string is computed on probabilities)"
  return getattr(loss, "__name__", repr(loss))


def _weight_decays(model):
  """The distinct ε of the model's prunable kernels: 2λ of their l2 regularizers, and the
  optimizer's decoupled `weight_decay` (docs/spec.md §6.1: "optimizer decay means ε = its
  coefficient"), each rounded to 7 significant digits (Keras stores λ as float32)."""
  found = set()
  for layer in model.layers:
    if pruning.is_prunable(layer):
      for attr in _REGULARIZERS:
        l2 = float(getattr(getattr(layer, attr, None), "l2", 0.0) or 0.0)
        if l2 > 0:
          found.add(float(f"{2 * l2:.7g}"))
  decay = getattr(getattr(model, "optimizer", None), "weight_decay", None)
  if isinstance(decay, (int, float)) and decay > 0:
    found.add(float(f"{decay:.7g}"))
  return found


def _softmax_output(model):
  """Whether the layer making `model`'s (one) output applies a softmax."""
  keras = keras2.keras()
  history = getattr(model.outputs[0], "_keras_history", None)
  layer = getattr(history, "layer", None)
  return (
    isinstance(layer, keras.layers.Softmax)
    or getattr(layer, "activation", None) is keras.activations.softmax
  )


def trainable(path, output_index=None, trust_model_code=False):
  """Checks that one-shot pruning can fine-tune the Keras reference `path`; returns its ε's.

  Args:
    path: a Keras reference.
    output_index: the audited output, for a model with several.
    trust_model_code: load it even if loading runs the model's own code (`imported.load`).

  Returns:
    The set of distinct weight decays ε it was trained with (`_weight_decays`; empty: none).

  Raises:
    imported.ReferenceModelError: it cannot be loaded compiled, is not compiled, its loss is not a
      sparse categorical cross-entropy of logits, its audited output is a softmax's, or it has
      no conv or dense kernel to prune, or it takes its images in another layout than
      `[N, H, W, C]` (the pruning code feeds the data set's images as they are).
    model_code.UntrustedCodeError: it holds code of its own, without `trust_model_code`.
  """
  model = _compiled(path, trust_model_code)
  layout = imported.input_layout_of(model, path)
  if layout.name != input_layout.NHWC:
    raise imported.ReferenceModelError(
      f"reference {path} takes {layout.describe()} inputs; "
      "one-shot pruning feeds [N, H, W, C] images: prune a model "
      "with that input"
    )
  fix = (
    "one-shot pruning fine-tunes with the mean sparse categorical cross-entropy of the "
    "logits (docs/spec.md §6.2, §6.4): compile it with "
    "loss=SparseCategoricalCrossentropy(from_logits=True) and save it again"
  )
  if not getattr(model, "_is_compiled", False) or getattr(model, "loss", None) is None:
    raise imported.ReferenceModelError(f"reference {path} was saved without model.compile: {fix}")
  loss = _output_loss(model, output_index)
  if not (
    isinstance(loss, keras2.keras().losses.SparseCategoricalCrossentropy)
    and loss.get_config().get("from_logits") is True
  ):
    raise imported.ReferenceModelError(
      f"reference {path} is compiled with loss {_describe_loss(loss)}: {fix}"
    )
  audited = imported.classifier(model, output_index)
  if _softmax_output(audited):
    raise imported.ReferenceModelError(
      f"reference {path} outputs probabilities (its last layer "
      f"is a softmax): {fix}, with logits out (no final "
      "softmax)"
    )
  if not pruning.prunable_kernels(audited):
    raise imported.ReferenceModelError(f"reference {path} has no conv or dense kernel to prune")
  return _weight_decays(model)


def member_status(run_dir, config):
  """`lineage.Status` of dense member `config` as a parent of pruned members.

  `config` is a `member_config.MemberConfig`. An imported member (`config.model == imported.MODEL`)
  is current when `imported.status` holds for the reference at the path its metadata records
  (the path the import stage checked against `--reference`: the file's sha256 and the saved
  `model.keras`); a trained member is checked by `member_files.status` against its config, as
  before.
  """
  directory = layout.member_dir(run_dir, config.variant, config.k)
  if config.model != imported.MODEL:
    return member_files.status(directory, config)
  if not filesystem.exists(os.path.join(directory, layout.METADATA_FILE)):
    return lineage.MISSING
  try:
    path = member_files.read_metadata(directory)["reference"]["path"]
    return imported.status(run_dir, config.k, path)
  except errors.Error as e:
    return lineage.Status(False, f"its reference is unreadable ({errors.one_line(e, 160)})")
  except (KeyError, TypeError):
    return lineage.Status(False, "its metadata records no reference (not an imported member)")
