"""The audit's units of work, as executor tasks: the members' and the files' (the evaluation tasks
are `tf_forget.pipeline.eval_tasks`, which use this module's `dataset_of` and `clear_keras`).

Each function here runs in an executor worker (`tf_forget.executor`: a local process, a Ray
worker, or the driver itself for `inline`). It is a pure function of its keyword arguments —
plain JSON values: run directory, names, options, seeds — and of the artifacts already on
disk; it writes its artifacts atomically through the stage it calls (`train_member`,
`export_population`, `evaluate_population`, `corruption_cache.fill`, the noise evaluator),
each of which skips what is current (lineage, docs/artifacts/runs.md), and it returns only
small JSON dicts (paths, hashes, counts), never a Keras object or an array.

So a task that is lost with its worker and retried redoes only what it had not finished (a
member resumes from its last checkpoint, bit-identically: `tf_forget.train.member`), and a
killed driver that is run again submits the same tasks, which find their work done.

Every task that may touch a GPU turns on memory growth first (`tf_forget.compat.gpu`; training
does it in `train_member`), so the tasks of one machine can share its GPUs.

The same task gives the same bytes on every executor: threads are set by the environment the
executor passes (`tf_forget.compat.cpu_kernels`), not by the number of workers.
"""

from tf_forget.artifacts import errors
from tf_forget.artifacts import names
from tf_forget.compat import gpu
from tf_forget.compat import keras2
from tf_forget.data import registry as data_registry
from tf_forget.export import candidates
from tf_forget.export import export as export_lib
from tf_forget.prune import gradient as prune_gradient
from tf_forget.prune import iterative_schedule
from tf_forget.prune import oneshot_member
from tf_forget.prune import oneshot_schedule
from tf_forget.prune import retrain as retrain_lib
from tf_forget.train import imported
from tf_forget.train import member as member_lib
from tf_forget.train import member_config
from tf_forget.train import member_files
from tf_forget.train import presets


class TaskError(errors.Error):
  """A task's arguments do not describe what the driver meant (one line)."""


def _preset(preset_json):
  """The driver's `presets.Preset` from its JSON (`Preset.from_json`; errors as `TaskError`)."""
  try:
    return presets.Preset.from_json(preset_json)
  except presets.PresetError as e:
    raise TaskError(str(e)) from e


def _oneshot_schedule(protocol_json):
  """The driver's `OneshotSchedule` from its JSON (errors as `TaskError`)."""
  try:
    return oneshot_schedule.OneshotSchedule.from_json(protocol_json)
  except oneshot_schedule.OneshotScheduleError as e:
    raise TaskError(str(e)) from e


def member_kwargs(cfg):
  """The JSON kwargs of `train_member` for a `member_config.MemberConfig` (driver side)."""
  return {
    "dataset": cfg.dataset,
    "model": cfg.model,
    "variant": cfg.variant,
    "k": int(cfg.k),
    "preset": cfg.preset.to_json(),
    "dataset_options": dict(cfg.dataset_options),
    "model_options": dict(cfg.model_options),
    "population_seed": int(cfg.population_seed),
  }


def dataset_of(name, options):
  """The task's data set; first, GPU memory growth (a worker may share its GPU)."""
  gpu.configure()
  return data_registry.get(name, **dict(options or {}))


def clear_keras():
  """Frees the worker's Keras graph state between tasks (a worker runs many)."""
  keras2.keras().backend.clear_session()


def train_member(
  run_dir,
  dataset,
  model,
  variant,
  k,
  preset,
  dataset_options=None,
  model_options=None,
  population_seed=0,
):
  """Trains (or resumes, or finds finished) one member; returns its model hash.

  Returns:
    {"member": "<variant>/<k>", "model_sha256", "test_accuracy"}.
  """
  cfg = member_config.MemberConfig(
    dataset=dataset,
    model=model,
    variant=variant,
    k=int(k),
    preset=_preset(preset),
    dataset_options=dict(dataset_options or {}),
    model_options=dict(model_options or {}),
    population_seed=int(population_seed),
  )
  try:
    meta = member_lib.train_member(cfg, member_files.member_dir(run_dir, variant, int(k)))
  finally:
    clear_keras()
  return {
    "member": f"{variant}/{k}",
    "model_sha256": meta["model_sha256"],
    "test_accuracy": meta.get("test_accuracy"),
  }


def prune_member(
  run_dir,
  dataset,
  model,
  variant,
  k,
  preset,
  protocol,
  dataset_options=None,
  model_options=None,
  population_seed=0,
):
  """Makes (or finds current) one one-shot member from its dense parent.

  Args:
    protocol: the `OneshotSchedule.to_json()` dict; the other arguments as `train_member`.

  Returns:
    {"member": "<variant>/<k>", "model_sha256", "test_accuracy"}.
  """
  cfg = oneshot_member.OneshotConfig(
    member=member_config.MemberConfig(
      dataset=dataset,
      model=model,
      variant=variant,
      k=int(k),
      preset=_preset(preset),
      dataset_options=dict(dataset_options or {}),
      model_options=dict(model_options or {}),
      population_seed=int(population_seed),
    ),
    protocol=_oneshot_schedule(protocol),
  )
  try:
    meta = oneshot_member.prune_member(cfg, run_dir)
  finally:
    clear_keras()
  return {
    "member": f"{variant}/{k}",
    "model_sha256": meta["model_sha256"],
    "test_accuracy": meta.get("test_accuracy"),
  }


def oneshot_gradient(
  run_dir,
  dataset,
  model,
  variant,
  k,
  preset,
  protocol,
  dataset_options=None,
  model_options=None,
  population_seed=0,
):
  """Computes (or finds current) g of one dense parent, read by its GP and UP members.

  docs/spec.md §6.2 ("the same g for GP and UP"): one task per parent, run before the
  parent's prune tasks (`tf_forget.pipeline.member_stages.GradientStage`), so that they never race
  to write it.

  Args:
    variant, k: the parent ("dense", k); protocol: `OneshotSchedule.to_json()`; the other
      arguments as `train_member`.

  Returns:
    {"parent": "<variant>/<k>", "path", "sha256"} of the g artifact.
  """
  parent = member_config.MemberConfig(
    dataset=dataset,
    model=model,
    variant=variant,
    k=int(k),
    preset=_preset(preset),
    dataset_options=dict(dataset_options or {}),
    model_options=dict(model_options or {}),
    population_seed=int(population_seed),
  )
  try:
    grad = prune_gradient.ensure(run_dir, parent, _oneshot_schedule(protocol))
  finally:
    clear_keras()
  return {"parent": f"{variant}/{k}", "path": grad.path, "sha256": grad.sha256}


def retrain_member(
  run_dir,
  dataset,
  model,
  variant,
  k,
  preset,
  protocol,
  dataset_options=None,
  model_options=None,
  population_seed=0,
):
  """Makes (or resumes, or finds current) one prune-retrain cycle from its parent.

  Args:
    protocol: the `IterativeSchedule.to_json()` dict; the other arguments as `train_member`.

  Returns:
    {"member": "<variant>/<k>", "model_sha256", "test_accuracy"}.
  """
  try:
    proto = iterative_schedule.IterativeSchedule.from_json(protocol)
  except iterative_schedule.IterativeScheduleError as e:
    raise TaskError(f"{e}: worker and driver versions differ") from e
  cfg = retrain_lib.RetrainConfig(
    member=member_config.MemberConfig(
      dataset=dataset,
      model=model,
      variant=variant,
      k=int(k),
      preset=_preset(preset),
      dataset_options=dict(dataset_options or {}),
      model_options=dict(model_options or {}),
      population_seed=int(population_seed),
    ),
    protocol=proto,
  )
  try:
    meta = retrain_lib.retrain_member(cfg, run_dir)
  finally:
    clear_keras()
  return {
    "member": f"{variant}/{k}",
    "model_sha256": meta["model_sha256"],
    "test_accuracy": meta.get("test_accuracy"),
  }


def export_member(
  run_dir, member_variant, k, dense_formats, pruned_formats, encodings, dense_encodings
):
  """Exports every file of one member (`export_lib.export_population` restricted to it).

  Returns:
    {"member", "files": [{"variant", "sha256" | "failed", "skipped"}]}.
  """
  gpu.configure()
  try:
    results = export_lib.export_population(
      run_dir,
      dense_formats=tuple(dense_formats),
      pruned_formats=tuple(pruned_formats),
      encodings=tuple(encodings),
      dense_encodings=tuple(dense_encodings),
      members=[(member_variant, int(k))],
    )
  finally:
    clear_keras()
  return {
    "member": f"{member_variant}/{k}",
    "files": [
      {
        "variant": r["variant"],
        "sha256": r.get("sha256"),
        "failed": r.get("failed"),
        "skipped": bool(r.get("skipped")),
      }
      for r in results
    ],
  }


def import_reference(
  run_dir, k, path, dataset, dataset_options, output_index=None, trust_model_code=False
):
  """Imports the user's Keras reference `path` as dense member k (`tf_forget.train.imported`;
  `trust_model_code`: `--trust_model_code`).

  Returns:
    {"member": "dense/<k>", "model_sha256"}.
  """
  data = dataset_of(dataset, dataset_options)
  try:
    meta = imported.import_member(run_dir, int(k), path, data, output_index, bool(trust_model_code))
  finally:
    clear_keras()
  return {"member": f"dense/{k}", "model_sha256": meta["model_sha256"]}


def store_user_file(
  run_dir, k, file_format, path, shape, classes, dataset, dataset_options, output_index=None
):
  """Stores the user's `.tflite` file `path` as the export `file_format` of dense member k
  (`tf_forget.export.candidates`: a candidate `user_<name>`, or a float32 reference).

  Returns:
    {"variant", "k", "sha256"}.
  """
  data = dataset_of(dataset, dataset_options)
  variant = names.Variant(names.DENSE, file_format)
  meta = candidates.store(
    run_dir,
    variant,
    int(k),
    path,
    data,
    reference=(tuple(shape), int(classes)),
    output_index=output_index,
  )
  return {"variant": variant.name, "k": int(k), "sha256": meta["sha256"]}
