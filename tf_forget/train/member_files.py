"""A member's directory on disk: its metadata, whether it is finished, its model file.

Every member — trained (`tf_forget.train.member`), imported from the user's file
(`tf_forget.train.imported`) or pruned after training (`tf_forget.prune`) — is a directory
`member_dir(run, variant, k)` holding `model.keras` and, written last, `metadata.json`
(`tf_forget.artifacts.member_metadata`, docs/artifacts/members.md). This module reads that
metadata (`read_metadata`), says whether a member is finished and current (`status`: the
metadata readable, `model.keras` with the sha256 it records, and the same config), writes a
model atomically (`save_model`, a one-line `errors.WriteError` when it cannot) and loads it
(`load_model`, Keras' safe mode off only for a member of a reference the user trusted,
`trusts_model_code`). A member made from another one (pruned after training) takes the keys
every member shares from `derived_metadata`, and its parent from `finished_parent`.
"""

import importlib.metadata
import os
import platform

import numpy as np
import tensorflow as tf

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import hashing
from tf_forget.artifacts import layout
from tf_forget.artifacts import lineage
from tf_forget.artifacts import member_metadata
from tf_forget.compat import cpu_kernels
from tf_forget.compat import gpu
from tf_forget.compat import keras2

MODEL_FILE = layout.MODEL_FILE
METADATA_FILE = layout.METADATA_FILE

member_dir = layout.member_dir


def read_metadata(directory):
  """A member's metadata dict (`member_metadata.read`); raises `errors.ReadError` if missing or
  not of its schema."""
  return member_metadata.read(os.path.join(directory, METADATA_FILE))


def status(directory, config=None):
  """`lineage.Status` of a member: finished, and its `model.keras` is the one it recorded.

  Finished means: `metadata.json` readable, `model.keras` present with the recorded sha256, and
  (if `config` is given) the same member config (`member_config.MemberConfig.inputs`).
  """
  if not filesystem.exists(os.path.join(directory, METADATA_FILE)):
    return lineage.MISSING
  model_path = os.path.join(directory, MODEL_FILE)

  def model_matches(meta):
    return lineage.file_reason(model_path, meta.get("model_sha256"), "model.keras", "trained")

  return lineage.status(
    lambda: read_metadata(directory),
    config.inputs() if config is not None else {},
    "trained",
    extra=model_matches,
  )


def is_finished(directory, config=None):
  """Whether the member is finished and current (`status`)."""
  return bool(status(directory, config))


def versions():
  """The versions of the software a member is made with (its metadata's `versions`).

  tfmot's is its installed distribution's: importing the package (~1.2 s) is left to the code
  that prunes.
  """
  try:
    tfmot = importlib.metadata.version("tensorflow-model-optimization")
  except importlib.metadata.PackageNotFoundError:
    tfmot = keras2.tfmot().__version__
  return {
    "tensorflow": tf.__version__,
    "tf_keras": keras2.keras().__version__,
    "tfmot": tfmot,
    "numpy": np.__version__,
    "python": platform.python_version(),
  }


def derived_metadata(config, dataset, **fields):
  """The member-schema metadata of a member made from another one (pruned after training).

  The keys every member shares — schema, data set and options, model and options, variant, k,
  seed, preset, precision policy (float32), GPUs, eval split, versions, machine — from
  `config` (a `MemberConfig`) and `dataset`, plus `fields` (steps, sparsity, accuracies,
  parent, pruning, model_sha256, inputs, ...).
  """
  return {
    "schema": member_metadata.SCHEMA,
    "dataset": config.dataset,
    "dataset_options": dict(dataset.spec.options),
    "model": config.model,
    "model_options": dict(config.model_options),
    "variant": config.variant,
    "k": int(config.k),
    "seed": int(config.seed),
    "population_seed": int(config.population_seed),
    "preset": config.preset.to_json(),
    "precision_policy": "float32",
    "gpus": gpu.describe(),
    "eval_split": dataset.spec.eval_split,
    "versions": versions(),
    "machine": cpu_kernels.describe(),
    **fields,
  }


def finished_parent(directory, state, member_label, parent_label, error, first, needs):
  """The metadata of the parent a member is made from (pruned after training).

  Args:
    directory: the parent's member directory.
    state: the parent's `lineage.Status` (its own kind's: `status` of a trained member, or of
      the pruned member it is).
    member_label, parent_label: "<variant>/<k>" of the member being made and of its parent.
    error: the `errors.Error` subclass to raise.
    first: what to make first when the parent is not finished (the end of the message).
    needs: what needs a float32 parent ("one-shot pruning", "prune-retrain").

  Returns:
    The parent's metadata dict.

  Raises:
    error: the parent is not finished and current, or was not trained in float32.
  """
  if not state:
    raise error(f"{member_label}: parent {parent_label} is not finished ({state.reason}); {first}")
  meta = read_metadata(directory)
  if meta.get("precision_policy", "float32") != "float32":
    raise error(
      f"parent {parent_label} was trained under {meta['precision_policy']}: {needs} needs float32"
    )
  return meta


def save_model(model, path):
  """Saves a tf_keras model atomically (Keras needs the `.keras` suffix on the temp name).

  Returns:
    The sha256 of the written file.

  Raises:
    errors.WriteError: the file cannot be written (one line); no temporary file is left.
  """
  tmp = path[: -len(".keras")] + ".tmp.keras"
  try:
    try:
      model.save(tmp)  # Keras writes local and URL (gs://) paths through TF's file systems
      sha = hashing.file_sha256(tmp, memo=False)
    except (OSError, tf.errors.OpError) as e:
      raise errors.write_error(path, e) from e
    fileio.rename(tmp, path)
  except errors.WriteError:
    try:
      filesystem.remove(tmp)
    except errors.WriteError:
      pass
    raise
  hashing.remember(path, sha)
  return sha


def trusts_model_code(meta):
  """Whether a member's metadata says it was imported, or pruned from a member imported, with
  `--trust_model_code` (`tf_forget.train.imported`): its model.keras may hold a `Lambda`."""
  for ref in (meta.get("reference"), (meta.get("parent") or {}).get("reference")):
    if isinstance(ref, dict) and ref.get("trust_model_code") is True:
      return True
  return False


def load_model(directory):
  """Loads a finished member's plain tf_keras model (Keras' safe mode off only for a member of
  a reference the user trusted, `trusts_model_code`)."""
  try:
    trusted = trusts_model_code(read_metadata(directory))
  except errors.ReadError:
    trusted = False
  return keras2.keras().models.load_model(
    os.path.join(directory, MODEL_FILE), compile=False, safe_mode=not trusted
  )
