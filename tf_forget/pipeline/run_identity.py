"""What a run directory was made with: `<out>/audit.json` (`tf_forget.artifacts.audit_json`).

    {"schema": ..., "config": <identity>, "audit_config": <the whole config>,
     "caveats": [<one sentence>, ...]}

`audit_identity(plan)` is the declared subset of the configuration
(`tf_forget.config.tree.AuditConfig`), as the plan resolved it, that decides what a re-run may
reuse; `check_audit_file` refuses a run directory whose `audit.json` records another identity,
naming the differing fields. `audit_config` is the whole configuration the run was made with, so
that `audit --config=<out>/audit.json` (`tree.load`) runs it again
(`tf_forget.pipeline.audit_plan` validates a config; `tf_forget.pipeline.audit_lib` writes the
file). `caveats` are what the validation's checks found without refusing (the input scaling
check unsure: `tf_forget.evaluate.input_scaling`), one sentence each, in check order; [] when
none. The report reads them (`tf_forget.report.collect.Run.caveats`).
"""

import json

from tf_forget.artifacts import audit_json
from tf_forget.artifacts import errors
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import predictions
from tf_forget.config import tree


def audit_identity(p):
  """The config fields that determine the artifacts of a run directory (`<out>/audit.json`).

  Recorded: dataset and its options (data_dir, image_size), the preset name and its full
  parameters after overrides (steps, batch size, ...), model, members, trained variants,
  quantizations, pruned_quantizations, encodings, corrupted splits (corruptions x severities),
  the noise protocol and the population seed; with `robustness="published"` (only then, so
  that directories made before the option keep their identity) the published suites. Not
  recorded, since they only affect the
  bundle, the gates or timings and are recomputed on every run: gates, deploy_members,
  deploy_encoding's "auto"/"sparse" choice (only "plain" vs not changes the files: `encodings`),
  max_sparse_latency_ratio and num_threads.
  """
  if p.user is not None:  # the user's models: their paths, not their bytes
    return json.loads(json.dumps(_user_identity(p.user, p)))
  pop = p.population
  oneshot = {"oneshot_protocol": p.oneshot_schedule.to_json()} if p.oneshot else {}
  if p.iterative:
    oneshot["iterative_protocol"] = p.iterative_schedule.to_json()
  return json.loads(
    json.dumps(
      {
        "dataset": pop.dataset,
        "dataset_options": predictions.without_content(pop.dataset_options),
        "preset": pop.preset.name,
        "preset_params": pop.preset.to_json(),
        "model": pop.model,
        "members": int(pop.members),
        "variants": list(p.variants),
        **oneshot,
        "quantizations": list(p.quantizations),
        "pruned_quantizations": list(p.pruned_quantizations),
        "encodings": list(p.encodings),
        "corruptions": list(p.corrupted),
        "noise": p.noise.to_json() if p.noise is not None else None,
        **(
          {
            "robustness": {
              "source": "published",
              "corrupted_suite": p.published.corrupted,
              "extra_splits": {x.name: x.suite for x in p.published.extra},
            }
          }
          if p.published is not None
          else {}
        ),
        "population_seed": int(pop.population_seed),
      }
    )
  )


def _user_identity(user, p):
  """The identity of an audit of the user's models (`tree.UserModels`)."""
  return {
    "user": {
      "references": list(user.references),
      "candidates": {n: list(paths) for n, paths in user.candidates},
      "compress": list(user.compress),
      "output_index": user.output_index,
      "calibration": user.calibration,
      "train": user.train,
    },
    **({"oneshot_protocol": p.oneshot_schedule.to_json()} if p.oneshot else {}),
    "dataset": p.population.dataset,
    "dataset_options": predictions.without_content(p.population.dataset_options),
    "members": p.population.members,
    "variants": list(p.variants),
    "quantizations": list(p.quantizations),
    "encodings": list(p.encodings),
    "corruptions": list(p.corrupted),
    "noise": None,
  }


def write_audit_file(out, identity, config, caveats=()):
  """Writes `<out>/audit.json`: the identity, the whole configuration (`config.to_json`) and the
  validation's `caveats` (sentences)."""
  audit_json.write(audit_json.path(out), identity, config.to_json(), caveats)


def _differences(old, new):
  """[(field, old value, new value)], dict fields compared one level down
  (`preset_params.steps`)."""
  out = []
  for key, value in new.items():
    before = old.get(key)
    if before == value:
      continue
    if isinstance(before, dict) and isinstance(value, dict):
      out.extend(
        (f"{key}.{sub}", before.get(sub), value.get(sub))
        for sub in sorted(set(before) | set(value))
        if before.get(sub) != value.get(sub)
      )
    else:
      out.append((key, before, value))
  return out


def check_audit_file(out, identity):
  """Raises `AuditError` if `<out>/audit.json` records another config (reads only).

  Returns:
    True if an equal audit.json exists, False if there is none.
  """
  path = audit_json.path(out)
  if not filesystem.exists(path):
    return False
  try:
    old = audit_json.read(path)
  except errors.ReadError as e:
    raise tree.AuditError(f"{e}: use another --out or remove it") from e
  diffs = _differences(old.get(audit_json.IDENTITY_KEY) or {}, identity)
  if diffs:
    was = ", ".join(f"{f}={a!r}" for f, a, _ in diffs)
    asks = ", ".join(f"{f}={b!r}" for f, _, b in diffs)
    raise tree.AuditError(
      f"{out} was made with {was}; this run asks {asks}: use another --out or remove it"
    )
  return True
