"""g, the mean data-loss gradient of a one-shot parent: one artifact per (parent, protocol).

docs/spec.md §6.2 asks for "the same g for GP and UP": g is a property of the dense
parent and of the gradient protocol, not of the member that reads it. It is computed once per parent
and written to

    <run>/members/dense/<k>/gradient/<protocol>.npz          (`layout.gradient_file`)

<protocol> being the first 16 hex digits of the sha256 of `protocol_json`, the part of the
one-shot protocol g depends on: `grad_batches` batches of `grad_batch_size` unaugmented records
of the fine-tuning part of train (every `validation_every`-th record is held out,
`epoch_selection.holdout`; train is the user's `--train` data for an imported parent,
`tf_forget.data.train_view`), shuffled with a seed derived from the parent's (`seed`); the
mean sparse cross-entropy of the logits without regularization, in inference mode
(`oneshot.mean_gradient`); every prunable kernel in layer order (a member that leaves the
classifier unpruned reads a subset). Every GP and UP member of the parent, at every ratio,
reads this one file and records its sha256 (`inputs.gradient`); MP and RP never compute it.

The file (`fileio.write_npz`, no pickle) holds `g_0`, `g_1`, ... (float64, one per kernel, in
layer order) and `metadata` (JSON): schema, parent {variant, k, model_sha256}, protocol and
its sha256, seed, `positions_sha256` of the record positions used, kernels [{name, shape}],
`arrays_sha256` (`hashing.arrays_sha256` of the named arrays) and `inputs` {model: the parent's
model_sha256, gradient_protocol, seed, and with the user's `--train` data train_data: its
`train_view.fingerprint`}. Its bytes are a function of those alone (no time;
numpy writes npz entries with zip's fixed 1980 date), so every executor writes the same bytes
for the same parent and protocol.

It is reused only if readable, of this schema, its arrays match `arrays_sha256` and its inputs
are the current parent's and protocol's; otherwise it is computed again, with a
`redo gradient dense/<k>: <why>` line.
"""

import dataclasses
import hashlib
import json
from typing import Dict

import numpy as np
import tensorflow as tf

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import hashing
from tf_forget.artifacts import layout
from tf_forget.artifacts import lineage
from tf_forget.compat import gpu
from tf_forget.compat import keras2
from tf_forget.data import registry as data_registry
from tf_forget.data import train_view
from tf_forget.prune import oneshot
from tf_forget.train import epoch_selection
from tf_forget.train import imported
from tf_forget.train import imported_parent
from tf_forget.train import member_files

SCHEMA = "tf_forget.gradient/1"
ALGORITHMS = ("gp", "up")  # the scores that read g (docs/spec.md §6.1)
SEED_RULE = "first 4 bytes of sha256('<parent seed>|gradient'), big-endian, & 0x7fffffff"


class GradientError(errors.Error):
  """g cannot be computed (no finished parent) or its file is garbage (one line)."""


@dataclasses.dataclass(frozen=True)
class Gradient:
  """g as a member reads it.

  Attributes:
    path: the artifact's path.
    sha256: sha256 of its bytes (what members record).
    grads: {kernel name: float64 array of the kernel's shape}, in layer order.
    metadata: the artifact's metadata dict.
  """

  path: str
  sha256: str
  grads: Dict[str, np.ndarray]
  metadata: dict

  def record(self):
    """A member's `pruning.gradient`: where g is, its sha256, protocol and records."""
    meta = self.metadata
    parent = meta["parent"]
    protocol = meta["protocol"]
    return {
      "path": layout.gradient_file("", parent["variant"], parent["k"], meta["protocol_sha256"]),
      "sha256": self.sha256,
      "protocol": protocol,
      "protocol_sha256": meta["protocol_sha256"],
      "seed": meta["seed"],
      "batches": protocol["batches"],
      "batch_size": protocol["batch_size"],
      "records": protocol["records"],
      "positions_sha256": meta["positions_sha256"],
    }


def needs(algorithm):
  """Whether an algorithm's score reads g (GP, UP; docs/spec.md §6.1)."""
  return algorithm in ALGORITHMS


def protocol_json(protocol):
  """What g depends on besides the parent (docs/spec.md §6.2), from a `protocol.OneshotSchedule`."""
  return {
    "schema": SCHEMA,
    "batches": int(protocol.grad_batches),
    "batch_size": int(protocol.grad_batch_size),
    "validation_every": int(protocol.validation_every),
    "records": "train records not held out for validation, unaugmented, shuffled with "
    "the seed, the first batches x batch_size",
    "seed_rule": SEED_RULE,
    "loss": "mean sparse cross-entropy of the logits, no regularization, inference mode",
    "kernels": "every prunable kernel (conv, dense) in layer order",
    "dtype": "float64",
  }


def protocol_sha256(protocol):
  return hashing.sha256_json(protocol_json(protocol))


def seed(parent):
  """The seed of g's batch draw, derived from the parent's `MemberConfig.seed` (`SEED_RULE`)."""
  digest = hashlib.sha256(f"{int(parent.seed)}|gradient".encode()).digest()
  return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def path(run_dir, parent, protocol):
  """g's file of `parent` (a dense `train.member_config.MemberConfig`) under `protocol`."""
  return layout.gradient_file(run_dir, parent.variant, parent.k, protocol_sha256(protocol))


def _inputs(parent, protocol, parent_sha256):
  """g's lineage inputs; `train_data` only with the user's `--train` data, so that
  the g of a trained parent keeps the inputs it recorded."""
  out = {
    "model": parent_sha256,
    "gradient_protocol": protocol_sha256(protocol),
    "seed": seed(parent),
  }
  train_data = train_view.fingerprint_of(parent.dataset, parent.dataset_options)
  if train_data is not None:
    out["train_data"] = train_data
  return out


def write(file, grads, metadata):
  """Writes g atomically: `g_<i>` float64 arrays in order, `metadata` with kernels and hash.

  Args:
    file: the `.npz` path.
    grads: {kernel name: array}, in layer order.
    metadata: the rest of the metadata (schema, parent, protocol, seed, inputs, ...).

  Returns:
    The metadata written.
  """
  arrays = [(name, np.asarray(g, np.float64)) for name, g in grads.items()]
  meta = dict(
    metadata,
    kernels=[{"name": n, "shape": list(a.shape)} for n, a in arrays],
    arrays_sha256=hashing.arrays_sha256(arrays),
  )
  fileio.write_npz(
    file,
    metadata=np.array(json.dumps(meta, sort_keys=True)),
    **{f"g_{i}": a for i, (_, a) in enumerate(arrays)},
  )
  return meta


def read(file):
  """Reads g: ({kernel name: float64 array} in layer order, metadata).

  Raises:
    errors.ReadError: missing, truncated or malformed file.
    GradientError: another schema, or arrays that are not the recorded ones (garbage).
  """
  arrays, meta = fileio.read_npz_with_metadata(file, "gradient")
  if meta.get("schema") != SCHEMA:
    raise GradientError(f"not a gradient artifact: schema {meta.get('schema')!r} ({file})")
  try:
    grads = {k["name"]: arrays.pop(f"g_{i}") for i, k in enumerate(meta["kernels"])}
  except (KeyError, TypeError) as e:
    raise GradientError(f"its arrays do not match its kernel list: {e!r} ({file})") from e
  if arrays or hashing.arrays_sha256(grads.items()) != meta.get("arrays_sha256"):
    raise GradientError(f"its arrays do not match its recorded arrays_sha256 ({file})")
  return grads, meta


def status(run_dir, parent, protocol, parent_sha256):
  """`lineage.Status` of g: readable, not garbage, of the current parent model and protocol."""
  file = path(run_dir, parent, protocol)
  return lineage.status(
    lambda: read(file)[1],
    _inputs(parent, protocol, parent_sha256),
    "computed",
    exists=lambda: filesystem.exists(file),
  )


def draw_batches(dataset, train_records, n, protocol, draw_seed):
  """(numpy (images, labels) batches, record positions used): g's input (docs/spec.md §6.2).

  Args:
    dataset: the parent's `dataset_api.Dataset`.
    train_records, n: the records not held out and their number (`epoch_selection.holdout`).
    protocol: the `OneshotSchedule` (`grad_batches`, `grad_batch_size`).
    draw_seed: the shuffle seed (`seed`).
  """
  ds = train_records.enumerate().shuffle(n, seed=draw_seed, reshuffle_each_iteration=False)

  def decode(i, record):
    image, label = dataset.decode_record(record)
    return i, image, label

  ds = ds.map(decode).batch(protocol.grad_batch_size, drop_remainder=True)
  batches, used = [], []
  for positions, images, labels in ds.take(protocol.grad_batches).as_numpy_iterator():
    batches.append((images.astype(np.float32), labels))
    used.extend(int(p) for p in positions)
  return batches, used


def compute(run_dir, parent, protocol):
  """g of the parent's `model.keras` under `protocol`, and what it was drawn from.

  Returns:
    ({kernel name: float64 array}, {"seed", "positions_sha256"}).
  """
  gpu.configure()
  draw_seed = seed(parent)
  keras2.keras().utils.set_random_seed(draw_seed)
  tf.config.experimental.enable_op_determinism()
  dataset = train_view.of(data_registry.get(parent.dataset, **dict(parent.dataset_options)))
  model = member_files.load_model(layout.member_dir(run_dir, parent.variant, parent.k))
  train_records, _, n_train, _ = epoch_selection.holdout(dataset, protocol.validation_every)
  batches, used = draw_batches(dataset, train_records, n_train, protocol, draw_seed)
  grads = oneshot.mean_gradient(model, batches, protocol.grad_batches)
  return grads, {"seed": draw_seed, "positions_sha256": hashing.sha256_json(used)}


def _parent_sha256(run_dir, parent):
  """The finished parent's model_sha256; GradientError if it is not finished and current."""
  directory = layout.member_dir(run_dir, parent.variant, parent.k)
  state = imported_parent.member_status(run_dir, parent)
  if not state:
    first = (
      "import the reference first"
      if parent.model == imported.MODEL
      else "train the dense population first"
    )
    raise GradientError(
      f"gradient of {parent.variant}/{parent.k}: the parent is not finished "
      f"({state.reason}); {first}"
    )
  return member_files.read_metadata(directory)["model_sha256"]


def current(run_dir, parent, protocol):
  """`status` of g against the parent as it is now.

  Raises:
    GradientError: the parent is not finished and current.
  """
  return status(run_dir, parent, protocol, _parent_sha256(run_dir, parent))


def ensure(run_dir, parent, protocol, log=None):
  """Reads g of `parent`, computing and writing it first unless it is current (docs/spec.md §6.2).

  Args:
    run_dir: the run directory.
    parent: the dense parent's `train.member_config.MemberConfig`.
    protocol: the `OneshotSchedule`.
    log: optional callable for the `redo gradient <parent>/<k>: <why>` line.

  Returns:
    A `Gradient`.

  Raises:
    GradientError: the parent is not finished; errors.WriteError: g cannot be written.
  """
  parent_sha = _parent_sha256(run_dir, parent)
  file = path(run_dir, parent, protocol)
  state = status(run_dir, parent, protocol, parent_sha)
  if not state:
    if state.reason != "missing" and log:
      log(f"redo gradient {parent.variant}/{parent.k}: {state.reason}")
    grads, drawn = compute(run_dir, parent, protocol)
    write(
      file,
      grads,
      dict(
        drawn,
        schema=SCHEMA,
        protocol=protocol_json(protocol),
        protocol_sha256=protocol_sha256(protocol),
        parent={"variant": parent.variant, "k": int(parent.k), "model_sha256": parent_sha},
        inputs=_inputs(parent, protocol, parent_sha),
      ),
    )
  grads, meta = read(file)
  return Gradient(path=file, sha256=hashing.file_sha256(file), grads=grads, metadata=meta)
