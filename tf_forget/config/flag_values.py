"""The audit binary's flags as a configuration (`tree.AuditConfig`).

`config_from_flags(values, present, base)` is the one place that reads flag values into the
tree: `tf_forget/commands/audit_flags.py` defines the flags, the audit passes their values; with
`--config=PATH`, `base` is that file's configuration and only the flags given on the command line
(`present`) replace its fields, otherwise every flag's value (its default too) goes into
`AuditConfig()`. `FLAG_PATHS` names the field of each flag; `flag_message` words a configuration
problem with the flag that sets the field (`--members must be ...` rather than
`population.members ...`).

Flags that set several fields at once: `--sparsities` (gradual `prune_<t>` variants besides
`--variants`), `--pruning`, `--ratios`, `--algorithms`, `--methods` (the one-shot and iterative
variants and methods), `--deploy_all_members`, and `--workers=0` with `--executor=local` (this
process). Given one flag of such a group, the whole group is read from the flags.

What lets the user's code run — `trust_model_code`, a `MODULE:FUNCTION` preprocess — is
taken from the command line only: a `--config` file that sets it is refused unless the
command line says it too (`check_trust_said`).
"""

from tf_forget.artifacts import filesystem
from tf_forget.artifacts import names
from tf_forget.config import checks
from tf_forget.config import codec
from tf_forget.config import tree
from tf_forget.policy import gates as gates_lib

PRUNING_KINDS = ("gradual", "oneshot", "iterative", "both")
_NONE = ["none"]  # --corruptions=none, --pruned_quantizations=none, --noise_levels=none: ()


def _path(value):
  return filesystem.user_path(value)


def _none_list(convert=str, what=None):
  """A list flag's tuple (--x=none: ()); a value `convert` refuses: "must be <what>"."""

  def read(values):
    if values is None:
      return None
    try:
      return tuple(() if values == _NONE else (convert(x) for x in values))
    except ValueError as e:
      raise ValueError(f"must be {what}, got {','.join(values)}") from e

  return read


def _data_spec(value):
  """A data spelling with a local `folder:` / `tfrecord:` location made absolute (as
  `tf_forget.data.sources.parse` reads it), so that a run's audit.json names the same data
  from any working directory (`--config`, `tf-forget report`); others as given."""
  if value is None:
    return None
  prefix, colon, rest = str(value).strip().partition(":")
  if colon and prefix in ("folder", "tfrecord") and rest.strip():
    return f"{prefix}:{_path(rest)}"
  return value


def _candidates(values):
  return tuple(
    (name, tuple(_path(p) for p in paths)) for name, paths in map(parse_candidate, values)
  )


def _image_size(values):
  if not all(str(v).strip().isdigit() for v in values):
    raise ValueError("must be two positive integers H,W, e.g. 64,64")
  return tuple(int(v) for v in values)


def _repairs(values):
  """--repair's names in the report's order (`names.sorted_repairs`); as given when one is
  not a repair (`checks.problems` then names it)."""
  given = tuple(v.strip() for v in values)
  return names.sorted_repairs(given) if all(map(names.repair_ok, given)) else given


def _opt_tuple(value):
  return tuple(value) if value else None


def _tuple(value):
  return None if value is None else tuple(value)


# flag -> (configuration path, conversion of the flag's value).
FLAG_PATHS = {
  "out": ("out", _path),
  "dataset": ("data.dataset", lambda v: _data_spec(str(v))),
  "data_dir": ("data.data_dir", _path),
  "image_size": ("data.image_size", lambda v: _image_size(v) if v else None),
  "max_image_pixels": ("data.max_image_pixels", int),
  "preset": ("population.preset", None),
  "model": ("population.model", None),
  "members": ("population.members", None),
  "steps": ("population.steps", None),
  "population_seed": ("population.population_seed", None),
  "robust_training": ("population.robust_training", None),
  "finetune": ("pruning.oneshot.phases", None),
  "grad_batches": ("pruning.oneshot.grad_batches", None),
  "exclude_classifier": ("pruning.oneshot.exclude_classifier", None),
  "ratio_over": ("pruning.oneshot.ratio_over", None),
  "up_formula": ("pruning.oneshot.up_formula", None),
  "cycles": ("pruning.iterative.cycles", None),
  "keep_alpha": ("pruning.iterative.alpha", None),
  "warmup_epochs": ("pruning.iterative.warmup_epochs", None),
  "retrain_steps": ("pruning.iterative.retrain_steps", None),
  "quantizations": ("formats.quantizations", _tuple),
  "pruned_quantizations": ("formats.pruned_quantizations", _none_list()),
  "corruptions": ("robustness.corruptions", _none_list()),
  "severities": ("robustness.severities", _none_list(int, "integers 1-5")),
  "robustness": ("robustness.source", None),
  "noise_levels": ("noise.levels", _none_list(float, "'none' or ascending numbers >= 0")),
  "noise_draws": ("noise.draws", None),
  "noise_examples": ("noise.examples", None),
  **{gate.name: (f"gates.{gate.name}", None) for gate in gates_lib.GATES},
  "deploy_encoding": ("deployment.encoding", None),
  "max_sparse_latency_ratio": ("deployment.max_sparse_latency_ratio", None),
  "num_threads": ("deployment.num_threads", None),
  "target": ("deployment.target", None),
  "size": ("deployment.size", None),
  "max_latency_ratio": ("deployment.max_latency_ratio", None),
  "latency_batch": ("deployment.latency_batch", None),
  "remeasure_latency": ("deployment.remeasure_latency", None),
  "ray_address": ("execution.ray_address", None),
  "repair": ("repair.repairs", lambda v: _repairs(v)),
  "max_repair_size": ("repair.max_size", None),
  "repair_always": ("repair.always", None),
}
USER_FLAGS = {
  "reference": ("user.references", lambda v: tuple(_path(p) for p in v)),
  "candidate": ("user.candidates", _candidates),
  "compress": ("user.compress", tuple),
  "labels": ("user.labels", lambda v: None if v == "auto" else v),
  "class_names": ("user.class_names", _opt_tuple),
  "attributes": ("user.attributes", _path),
  "protected": ("user.protected", _opt_tuple),
  "output_index": ("user.output_index", None),
  "preprocess": ("user.preprocess", None),
  "calibration": ("user.calibration", _data_spec),
  "train": ("user.train", _data_spec),
  "deployment_images": ("user.deployment_images", _data_spec),
  "trust_model_code": ("user.trust_model_code", None),
  "input_scaling_check": ("user.input_scaling_check", lambda v: v == "on"),
}
STUDY_FLAGS = {
  "annotation_export": ("human_study.export_dir", _path),
  "annotations": ("human_study.annotations", _path),
  "annotation_key": ("human_study.key", _path),
  "annotation_variant": ("human_study.variant", None),
  "annotation_group": ("human_study.group", None),
  "annotation_per_group": ("human_study.per_group", None),
  "annotation_seed": ("human_study.seed", None),
  "annotation_columns": ("human_study.columns", tuple),
}
VARIANT_FLAGS = ("variants", "sparsities", "pruning", "ratios", "algorithms", "methods")
# The flag named for a field that a group of flags sets (`config_from_flags`).
PATH_FLAGS = {
  "population.variants": "variants",
  "deployment.members": "deploy_all_members",
  "execution.executor": "executor",
  "execution.workers": "workers",
  "pruning.oneshot.variants": "pruning",
  "pruning.iterative.methods": "pruning",
}


def parse_candidate(text):
  """("int8", ("a.tflite", "b.tflite")) from "int8=a.tflite,b.tflite" (`--candidate`).

  Raises:
    AuditError: no "=", no path, or a bad name (`names.user_format`).
  """
  name, sep, paths = str(text).partition("=")
  files = tuple(p.strip() for p in paths.split(",") if p.strip())
  if not sep or not files:
    raise tree.AuditError(f"--candidate={text}: expected NAME=PATH[,PATH...]")
  names.user_format(name)
  return name, files


def default_out(dataset):
  """runs/<data set> (runs/folder for folder:PATH and the other spellings of your data)."""
  return _path("runs/" + str(dataset).split(":", 1)[0])


def _numbers(values, flag, convert, ok, what):
  try:
    out = [convert(v) for v in values]
  except ValueError:
    out = None
  if out is None or not all(map(ok, out)):
    raise tree.AuditError(f"--{flag} must be {what}, got {','.join(map(str, values))}")
  return out


def _variant_fields(values):
  """{path: value} of the variant group (`VARIANT_FLAGS`)."""
  for flag, known in (
    ("pruning", PRUNING_KINDS),
    ("algorithms", names.ONESHOT_ALGORITHMS),
    ("methods", names.ITERATIVE_ALGORITHMS),
  ):
    if not values[flag] or not all(v in known for v in values[flag]):
      raise tree.AuditError(
        f"--{flag} must be among {', '.join(known)}, got {','.join(values[flag] or [])!r}"
      )
  variants = values["variants"]
  if values["sparsities"]:
    sparsities = _numbers(
      values["sparsities"], "sparsities", float, lambda t: 0 < t < 1, "numbers in (0, 1)"
    )
    variants = list(variants or [names.DENSE]) + [f"prune_{t:g}" for t in sparsities]
  kinds = set(values["pruning"])
  if "both" in kinds:
    kinds |= {"gradual", "oneshot"}
  oneshot, methods = (), ()
  if "oneshot" in kinds:
    ratios = _numbers(values["ratios"], "ratios", float, lambda r: r > 1, "numbers > 1")
    oneshot = tuple(v.name for v in names.oneshot_variants(values["algorithms"], ratios))
  if "iterative" in kinds:
    methods = tuple(dict.fromkeys(values["methods"]))
  if "gradual" not in kinds and variants is None:
    variants = [names.DENSE]
  return {
    "population.variants": tuple(variants) if variants is not None else None,
    "pruning.oneshot.variants": oneshot,
    "pruning.iterative.methods": methods,
  }


def _given(flag_table, values, apply):
  """{path: converted value} of the flags of `flag_table` that `apply(flag)` selects."""
  out = {}
  for flag, (path, convert) in flag_table.items():
    value = values[flag]
    if apply(flag) and value is not None:  # None: not given (the field keeps its value)
      try:
        out[path] = convert(value) if convert is not None else value
      except ValueError as e:
        text = str(e)  # "must be ..." from this module's conversions, else Python's own words
        raise tree.AuditError(
          f"--{flag} {text}" if text.startswith("must ") else f"--{flag}: {text}"
        ) from e
  return out


def _optional_section(table, values, present, keys, have_base, what):
  """The fields of an optional section (the human study: `keys` --annotation_export,
  --annotations) from the flags, refusing them without `keys`."""
  on = have_base or any(values[k] for k in keys)
  given = [f for f in table if f in present and f not in keys]
  if not on:
    if given:
      raise tree.AuditError(f"--{given[0]} {what}")
    return {}
  return _given(table, values, lambda f: f in present or not have_base)


MODEL_FLAGS = (
  "candidate",
  "compress",
  "calibration",
  "train",
  "deployment_images",
  "output_index",
  "preprocess",
  "trust_model_code",
  "input_scaling_check",
)
DATA_FLAGS = ("labels", "class_names", "attributes", "protected")


def _refuse_without_reference(present):
  """Raises `AuditError` for a flag of the user's model or data given without --reference."""
  if any(f in present for f in MODEL_FLAGS):
    raise tree.AuditError(
      f"{', '.join('--' + f for f in MODEL_FLAGS[:-2])}, "
      f"--{MODEL_FLAGS[-2]} and --{MODEL_FLAGS[-1]} audit your own model: "
      "give it with --reference"
    )
  if any(f in present for f in DATA_FLAGS):
    raise tree.AuditError(
      "--labels, --class_names, --attributes and --protected describe your own data "
      "for your own model: give it with --reference"
    )


def check_trust_said(base, values, present, source="the --config file"):
  """Refuses a configuration read from a file that lets code run which the command line does
  not: the reference's own Python code (`trust_model_code`) or a `MODULE:FUNCTION` preprocess.

  Trust is said on the command line, never taken from a file (a run's audit.json handed on, a
  shared configuration): the flag given there decides, whatever the file says.

  Args:
    base: the `tree.AuditConfig` read from the file.
    values: the command line's flag values by name (`trust_model_code`, `preprocess`).
    present: the names of the flags the command line gave.
    source: how the message names the file.

  Raises:
    AuditError: one line naming the flag that says it.
  """
  user = base.user
  if user is None:
    return
  if user.trust_model_code and not ("trust_model_code" in present and values["trust_model_code"]):
    raise tree.AuditError(
      f"{source} sets trust_model_code: loading the reference would run the model's "
      "own Python code, and a file cannot allow that; give --trust_model_code on the command "
      "line too (or --notrust_model_code)"
    )
  if user.preprocess and ":" in user.preprocess and "preprocess" not in present:
    raise tree.AuditError(
      f"{source} sets preprocess={user.preprocess}: the audit would import and run "
      "that module's code, and a file cannot allow that; give "
      f"--preprocess={user.preprocess} on the command line too"
    )


def config_from_flags(values, present, base=None):
  """The `tree.AuditConfig` of the audit binary's flags.

  Args:
    values: {flag name: value} of every flag of `tf_forget/commands/audit_flags.py`.
    present: the flags given on the command line.
    base: the `--config` file's configuration, whose fields only the `present` flags replace;
      None: `AuditConfig()` with every flag's value.

  Raises:
    AuditError: a flag of the user's models without --reference, of the human study without
      --annotation_export / --annotations, a bad value (one line naming the flag), or a `base`
      that lets the model's or a module's code run without the command line saying so
      (`check_trust_said`).
  """
  if base is not None:
    check_trust_said(base, values, present)
  use = (lambda f: f in present) if base is not None else (lambda f: True)
  fields = _given(FLAG_PATHS, values, use)
  if any(use(f) for f in VARIANT_FLAGS):
    fields.update(_variant_fields(values))
  if use("deploy_all_members"):
    fields["deployment.members"] = "all" if values["deploy_all_members"] else "first"
  if use("executor") or use("workers"):
    local_none = values["workers"] == 0 and values["executor"] == "local"
    fields["execution.executor"] = "inline" if local_none else values["executor"]
    fields["execution.workers"] = values["workers"]
  if base is None and not values["out"]:
    fields["out"] = default_out(values["dataset"])
  have_user = base is not None and base.user is not None
  if have_user or values["reference"]:
    fields.update(_given(USER_FLAGS, values, lambda f: f in present or not have_user))
  else:
    _refuse_without_reference(present)
  fields.update(
    _optional_section(
      STUDY_FLAGS,
      values,
      present,
      ("annotation_export", "annotations"),
      base is not None and base.human_study is not None,
      "belongs to 000's human study: give --annotation_export or --annotations",
    )
  )
  try:
    return tree.with_overrides(base or tree.AuditConfig(), fields)
  except codec.ConfigError as e:
    raise tree.AuditError(flag_message(e.path, e.text) if e.path else str(e)) from e


def flag_of(path):
  """The flag that sets the configuration field `path` ("population.members" -> "members"),
  or None."""
  path = str(path).split("[", 1)[0]
  if path in PATH_FLAGS:
    return PATH_FLAGS[path]
  for table in (FLAG_PATHS, USER_FLAGS, STUDY_FLAGS):
    for flag, (known, _) in table.items():
      if known == path:
        return flag
  return None


def flag_message(path, text):
  """A configuration problem worded with its flag: "--members must be an integer >= 2"."""
  flag = flag_of(path)
  return f"--{flag} {text}" if flag else f"{path} {text}"


def check(config):
  """Raises `AuditError` for the first problem of `config` (`checks.problems`), worded with
  its flag."""
  found = checks.problems(config)
  if found:
    raise tree.AuditError(flag_message(*found[0]))
