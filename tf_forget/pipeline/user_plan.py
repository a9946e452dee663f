"""The plan of an audit of the user's own model, files and data.

    audit --dataset=folder:/data/test --reference=model.keras \
          --candidate=int8=model_int8.tflite --compress=float16 --out=/tmp/audit

`tree.UserModels` is what the user brings (`AuditConfig.user`, `tf_forget.config.tree`): K reference
model files (the dense population: K = 1 is one network), their own `.tflite` candidates (one file
per reference), formats tf_forget makes from the references (`--compress`), and how to read the data
(class names, an attributes CSV, the protected attributes). Its plan steps (`STEPS`, run by
`audit_plan.plan`, `tf_forget.pipeline.plan_steps`) check all of it before anything is written —
every file readable, every signature an image classifier of the data set's classes and image size
(in any input layout, `tf_forget.data.input_layout`), every candidate the images of its reference,
every model and file given once and every `.tflite` file's outputs finite (`user_checks`) —
and returns the audit's `Plan` (`tf_forget.pipeline.audit_plan.Plan`) whose `population` is an
`ImportedPopulation`: the audit then imports instead of training
(`tf_forget.pipeline.import_stages`) and runs the same export, evaluation, report, verdict, gates
and bundle.

The data: `--dataset` takes every spelling of `tf_forget.data.sources` (`folder:PATH`,
`tfds:NAME[/CONFIG][:SPLIT]`, `tfrecord:GLOB`, or a registered data set). Images are resized
to the reference's input size and channels (`tf_forget.data.user_sets`); an `--image_size`
other than that size is refused.

One-shot pruning of Keras references (`--pruning=oneshot --train=DATA`):
`tf_forget.pipeline.user_prune_plan` checks it and gives the variants, schedule and preset the plan
carries.
"""

import dataclasses
from typing import Tuple

from tf_forget.artifacts import errors
from tf_forget.artifacts import names
from tf_forget.config import tree
from tf_forget.corruptions import corruption_registry
from tf_forget.data import dataset_api
from tf_forget.data import registry as data_registry
from tf_forget.data import sources
from tf_forget.export import candidates as candidates_lib
from tf_forget.pipeline import deployment_plan
from tf_forget.pipeline import gate_plan
from tf_forget.pipeline import plan_steps
from tf_forget.pipeline import repair_plan
from tf_forget.pipeline import unlabelled_plan
from tf_forget.pipeline import user_checks
from tf_forget.pipeline import user_costs
from tf_forget.pipeline import user_prune_plan
from tf_forget.train import imported

# The statistics of an audit without labels, in the plan's words (docs/spec.md §8).
UNLABELLED = "one network (K = 1) without labels: flips against your model's decisions"


@dataclasses.dataclass(frozen=True)
class ImportedPopulation:
  """The dense population of an audit of the user's models (`Plan.population`).

  Attributes:
    run_dir: the run directory.
    dataset, dataset_options: the data set's registry name and options.
    members: K, the number of references.
    kind: "keras" or "tflite" (the references' kind).
    signature: ((H, W, C), classes) of the references.
    variants: ("dense",).
    model: "user" (`imported.MODEL`).
    preset: the imported members' preset as one-shot pruning reads it (`imported_parent.preset`), or
      None without one-shot variants.
    model_options, population_seed: {} and 0 (what member configs read of a population,
      `tf_forget.prune.pruned_population`).
  """

  run_dir: str
  dataset: str
  dataset_options: dict
  members: int
  kind: str
  signature: tuple
  variants: Tuple[str, ...] = (names.DENSE,)
  model: str = imported.MODEL
  preset: object = None
  model_options: dict = dataclasses.field(default_factory=dict)
  population_seed: int = 0


def _asked(user, population, pruning):
  """Step: references given, and something to audit against them: candidates, formats to
  make, or one-shot variants (`user_prune_plan.variants`)."""
  if not user.references:
    raise tree.AuditError("--reference: give at least one model file")
  oneshot = user_prune_plan.variants(population, pruning.oneshot)
  if not user.candidates and not user.compress and not oneshot:
    raise tree.AuditError(
      "nothing to audit against the reference: give --candidate=NAME=FILE.tflite and / or "
      f"--compress={','.join(user_checks.COMPRESS_FORMATS)} (or --pruning=oneshot)"
    )
  return {"oneshot_asked": oneshot}


def _kind(user):
  """Step: the references' kind, "keras" or "tflite" (one for all)."""
  kinds = {imported.kind(path) for path in user.references}
  if len(kinds) != 1:
    raise tree.AuditError("--reference: mix of Keras and .tflite files; give one kind")
  return {"kind": kinds.pop()}


def _signature(user, kind):
  """Step: ((H, W, C), classes) shared by every reference (loaded and checked; a `.tflite`
  reference must be a float32 file, `candidates.check_float_reference`), and the first Keras
  reference (None for `.tflite` references) for the cost estimate (`_estimate`)."""
  references, output_index = user.references, user.output_index
  found, models = [], []
  for path in references:
    if kind == "keras":
      models.append(imported.load(path, user.trust_model_code))
      found.append(imported.signature(models[-1], path, output_index))
    else:
      data = user_checks.read_tflite(path)
      candidates_lib.check_float_reference(data, path)
      found.append(candidates_lib.signature(data, path, output_index))
  for path, sig in zip(references[1:], found[1:]):
    candidates_lib.check_signature(path, sig, found[0], f"reference {references[0]}")
  return {"signature": found[0], "reference_model": models[0] if models else None}


def _dataset(data, user, repair, signature, train, check_data):
  """Step: the audited data set, read at the references' image size and channels (`train`: the
  `train_data` option, `user_prune_plan.train_option`); without labels as
  `unlabelled_plan.dataset_options` says; `check_data=False`: listed, no image decoded
  (`--plan`)."""
  name, options = sources.parse(data.dataset)
  if data.data_dir and name == "tfds":
    options["data_dir"] = data.data_dir
  unlabelled = unlabelled_plan.labels(name, options, user) is not None
  if name in sources.PREFIXES:
    (height, width, channels), classes = signature
    if unlabelled:
      options.update(unlabelled_plan.dataset_options(name, options, user, repair, classes))
    options.update(image_size=[height, width], channels=channels)
    options.update(
      {
        k: v
        for k, v in (
          ("class_names", list(user.class_names) if user.class_names else None),
          ("attributes", user.attributes),
          ("protected", list(user.protected) if user.protected else None),
          ("preprocess", user.preprocess),
          ("calibration", _calibration(data.data_dir, user, classes)),
          ("train_data", train),
          ("deployment_images", deployment_plan.option(data.data_dir, user, unlabelled)),
        )
        if v is not None and k not in options
      }
    )
  elif (
    user.class_names
    or user.attributes
    or user.protected
    or user.preprocess
    or user.calibration
    or train
    or user.deployment_images
  ):
    raise tree.AuditError(
      f"--class_names / --attributes / --protected / --preprocess / --calibration / --train "
      f"/ --deployment_images describe the user's own data (folder:, tfds:, tfrecord:); {name!r} has its own"
    )
  options = {k: v for k, v in options.items() if v is not None}
  dataset = data_registry.get(name, **options)
  if check_data:
    dataset.take(dataset.spec.eval_split, 1)
    if user.preprocess:  # checked on 8 test images (MODULE:FUNCTION: the user's code runs here)
      dataset.model_inputs(dataset.take(dataset.spec.eval_split, 8))
  return {"dataset": dataset}


def _calibration(data_dir, user, classes):
  """{"name", "options"} of `--calibration` (`sources.parse`; data without labels read with the
  model's `classes`, `unlabelled_plan.calibration_options`), or None.

  Raises:
    AuditError: not a folder:, tfds: or tfrecord: spelling, or no full_int8 to calibrate.
  """
  if not user.calibration:
    return None
  if "full_int8" not in user.compress:
    raise tree.AuditError("--calibration calibrates --compress=full_int8; nothing else uses it")
  name, options = sources.parse_own("calibration", user.calibration, data_dir)
  options.update(unlabelled_plan.calibration_options(name, options, user, classes))
  return {"name": name, "options": {k: v for k, v in options.items() if v is not None}}


def _matches(user, signature, dataset):
  """Step: the references' classes and image layout match the data set
  (`imported.check_matches`)."""
  imported.check_matches(user.references[0], *signature, dataset)


def _corrupted(robustness):
  """Corrupted splits: none unless --corruptions asks (at --severities, default 3), generated
  at the size of the user's images (`tf_forget.corruptions`)."""
  severities = tuple(robustness.severities or (3,))
  out = []
  for name in robustness.corruptions or ():
    for severity in severities:
      corruption_registry.check(name, severity)
      out.append(corruption_registry.split_name(name, severity))
  return tuple(out)


def _population(out, user, deployment, robustness, dataset, kind, signature, preset, oneshot):
  """Step: the `ImportedPopulation` and the plan's fields of an audit of the user's files (the
  formats tf_forget makes, the encodings, the corrupted splits: `_corrupted`)."""
  pop = ImportedPopulation(
    run_dir=out,
    dataset=dataset.spec.name,
    dataset_options=dict(dataset.spec.options),
    members=len(user.references),
    kind=kind,
    signature=signature,
    preset=preset,
  )
  # Sparse twins of the one-shot members' files as in a trained audit (`deploy_encoding`).
  encodings = (
    (names.DEFAULT_ENCODING,)
    if not oneshot or deployment.encoding == "plain"
    else (names.DEFAULT_ENCODING, "sparse")
  )
  return dict(
    population=pop,
    quantizations=tuple(user.compress),
    pruned_quantizations=(),
    encodings=encodings,
    corrupted=_corrupted(robustness),
    noise=None,
    robustness_members=tuple(range(pop.members)),
    user=user,
  )


def _estimate(user, dataset, kind, quantizations, corrupted, reference_model):
  """Step: the `user_costs.Estimate` of the audit, from the files' MACs per image and the number
  of images (no image is read), or None and why; the plan informs: a cost that
  cannot be told stops nothing."""
  try:
    files = [(names.user_format(n), candidates_lib.read(paths[0])) for n, paths in user.candidates]
    if kind != "keras":  # the float reference file is audited as float32
      files.insert(0, (names.DEFAULT_FORMAT, candidates_lib.read(user.references[0])))
    found = user_costs.user_estimate(
      user, dataset, quantizations, corrupted, reference_model, files
    )
  except errors.Error as e:
    return {"estimate": None, "estimate_note": errors.one_line(e, 200)}
  return {"estimate": found, "estimate_note": ""}


Step = plan_steps.Step
# The plan of an audit of `config.user` (`audit_plan.plan` runs them, in this order); with
# check_data=False (`--plan`) the data are listed but no image is decoded: the models and
# files are checked, the images are not.
STEPS = (
  Step(_asked, reads=("user", "population", "pruning"), makes=("oneshot_asked",)),
  Step(user_checks.out_apart, reads=("out", "data", "user")),
  Step(_kind, reads=("user",), makes=("kind",)),
  Step(user_checks.distinct, reads=("user",)),
  Step(
    user_prune_plan.train_option,
    reads=("data", "user"),
    needs=("kind", "oneshot_asked"),
    makes=("train",),
  ),
  Step(_signature, reads=("user",), needs=("kind",), makes=("signature", "reference_model")),
  Step(user_checks.image_size, reads=("data", "user"), needs=("signature",)),
  Step(
    _dataset,
    reads=("data", "user", "repair"),
    needs=("signature", "train", "check_data"),
    makes=("dataset",),
  ),
  Step(_matches, reads=("user",), needs=("signature", "dataset")),
  Step(deployment_plan.check, reads=("user",), needs=("dataset", "check_data")),
  Step(user_checks.candidates, reads=("user",), needs=("signature",)),
  Step(user_checks.finite_outputs, reads=("user",), needs=("kind", "dataset", "check_data")),
  Step(user_checks.compress, reads=("user",), needs=("kind", "dataset", "check_data")),
  Step(
    user_prune_plan.plan,
    reads=("pruning", "user"),
    needs=("dataset", "oneshot_asked", "check_data"),
    makes=("oneshot", "oneshot_schedule", "preset"),
  ),
  Step(
    _population,
    reads=("out", "user", "deployment", "robustness"),
    needs=("dataset", "kind", "signature", "preset", "oneshot"),
    makes=(
      "population",
      "quantizations",
      "pruned_quantizations",
      "encodings",
      "corrupted",
      "noise",
      "robustness_members",
      "user",
    ),
  ),
  gate_plan.STEP,
  repair_plan.STEP,
  Step(
    _estimate,
    reads=("user",),
    needs=("dataset", "kind", "quantizations", "corrupted", "reference_model"),
    makes=("estimate", "estimate_note"),
  ),
)


def describe(p):
  """The plan: what is audited, then its cost (`tf_forget.pipeline.user_costs`: inferences per file
  and an estimate of the time from the files' MACs per image and the number of images; no image is
  read)."""
  pop, spec = p.population, p.dataset.spec
  (h, w, c), classes = pop.signature
  cands = [name for name, _ in p.user.candidates]
  return (
    f"audit plan: your model ({pop.kind}, {pop.members} reference"
    f"{'' if pop.members == 1 else 's'}, {h}x{w}x{c} -> {classes} classes) on "
    f"{spec.name} ({spec.eval_split} split, {p.dataset.num_examples(spec.eval_split)} "
    f"images{', no labels' if dataset_api.unlabelled(spec.options) else ''})\n  candidates: {', '.join(cands) or 'none'}; made here: "
    f"{', '.join(('float32',) + tuple(p.quantizations)) if pop.kind == 'keras' else 'none'}"
    f"{user_prune_plan.describe(p)}{deployment_plan.describe(p)}\n  statistics: "
    f"{UNLABELLED if dataset_api.unlabelled(spec.options) else _design(pop.members)}\n"
    + "\n".join(_cost_lines(p))
  )


def _cost_lines(p):
  """`user_costs.lines` of the plan (one line saying why when the files cannot be read)."""
  if p.estimate is None:
    return [f"  (no cost estimate: {p.estimate_note})"]
  return user_costs.lines(p.estimate, p.population.members)


def _design(members):
  if members == 1:
    return "one network (K = 1): paired over the test examples"
  return f"K = {members} networks: population measures, paired by member"
