r"""The audit command (thin binary over `eval/audit_lib.py`).

  bazel run //eval:audit                       # embedded default: digits, offline
  bazel run //eval:audit -- --dataset=digits_biased
  bazel run //eval:audit -- --dataset=celeb_a  # the paper's protocol (needs the tfds data)
  bazel run //eval:audit -- --plan --dataset=imagenet2012  # its cost plan (no data needed)
  bazel run //eval:audit -- --pruning=oneshot --ratios=2,4,10,20,50  # 002: prune after training
  bazel run //eval:audit -- --dataset=cifar10 --robustness=published  # CIFAR-10-C, CIFAR-10.1
  bazel run //eval:audit -- --pruning=iterative --methods=wt,ft      # 003: prune-retrain cycles
  bazel run //eval:audit -- --pruning=iterative --robust_training    # 003 §6: robust (re)training

Exit status: 0 when every gate passes, 3 when a gate fails, 1 on bad input (one line), 130 / 143
when interrupted by Ctrl-C / SIGTERM (finished work is kept: run the same command to resume).
TensorFlow's own output goes to <out>/logs/ (`--verbose`: the terminal); see `tf_forget.cli`.
"""

# pylint: disable=g-import-not-at-top,wrong-import-position
from tf_forget.cli import startup

if __name__ == "__main__":  # Ctrl-C / SIGTERM during the imports below: one line, 130 / 143
  startup.guard("audit")

import math
import os
import sys

from absl import flags
from absl import logging

from tf_forget import executor as executor_lib
from tf_forget.artifacts import errors
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import names
from tf_forget.cli import app as cli_app
from tf_forget.cli import console
from tf_forget.compat import cpu_kernels
from tf_forget.compat import keras2
from tf_forget.corruptions import robust_training
from tf_forget.prune import scores as prune_scores
from tf_forget.report import gates as gates_lib
# pylint: enable=g-import-not-at-top,wrong-import-position

GATE_FAILED = 3

_DATASET = flags.DEFINE_string("dataset", "digits", "Data set to audit (tf_forget/data).")
_OUT = flags.DEFINE_string("out", None, "Run directory (default: runs/<dataset>).")
_PLAN = flags.DEFINE_bool("plan", False,
                          "Print the audit's cost plan (counts per stage and an estimate) and "
                          "exit 0: writes nothing, needs no data on disk (eval/costs.py); with "
                          "--reference, the files' inferences over the listed images and the "
                          "time, no image read (eval/user_costs.py).")
_UNIT_COSTS = flags.DEFINE_string("unit_costs", None,
                                  "Unit-cost file of --plan (default: "
                                  "eval/unit_costs/cpu_2core_avx512.json).")
_PRESET = flags.DEFINE_string("preset", None, "Training protocol (default: the data set's).")
_MODEL = flags.DEFINE_string("model", None, "Model (default: the preset's).")
_MEMBERS = flags.DEFINE_integer("members", None, "Members per variant (K >= 2).",
                                lower_bound=2)
_VARIANTS = flags.DEFINE_list("variants", None,
                              "Trained variants, e.g. dense,prune_0.5,prune_0.9.")
_SPARSITIES = flags.DEFINE_list("sparsities", None,
                                "Pruning levels in (0, 1), e.g. 0.5,0.9 (adds dense).")
PRUNING_KINDS = ("gradual", "oneshot", "iterative", "both")
_PRUNING = flags.DEFINE_list(
    "pruning", ["gradual"],
    "Comma-separated: gradual = pruning during training (000, the preset's or --sparsities "
    "levels); oneshot = dense members pruned after training by --algorithms to --ratios and "
    "fine-tuned (002); iterative = dense members pruned and retrained cycle after cycle by "
    "--methods (003 Algorithm 1); both = gradual,oneshot.")
_RATIOS = flags.DEFINE_list("ratios", ["2", "4", "10", "20", "50"],
                            "One-shot compression ratios r > 1 (weights before / after; 002).")
_ALGORITHMS = flags.DEFINE_list("algorithms", list(names.ONESHOT_ALGORITHMS),
                                "One-shot algorithms: mp magnitude, gp gradient, up undecayed, "
                                "rp random (002 §3).")
_FINETUNE = flags.DEFINE_string("finetune", None,
                                "One-shot fine-tuning phases <epochs>@<lr>,... (default: the "
                                "preset's, e.g. digits 3@0.05,2@0.005,2@0.0005).")
_GRAD_BATCHES = flags.DEFINE_integer("grad_batches", None,
                                     "Training batches averaged for GP/UP's gradient "
                                     "(default 1, SPEC §6.2).", lower_bound=1)
_EXCLUDE_CLASSIFIER = flags.DEFINE_bool("exclude_classifier", None,
                                        "Leave the classifier unpruned (002's reference).")
_RATIO_OVER = flags.DEFINE_enum("ratio_over", None, ["prunable", "all"],
                                "Count one-shot ratios over the prunable kernels (default) "
                                "or all parameters (002's reference; SPEC §6.3).")
_UP_FORMULA = flags.DEFINE_enum("up_formula", None, list(prune_scores.UP_FORMULAS),
                                "UP score: the authors' code (default) or 002's derivation "
                                "line read literally (SPEC §6.1).")
_METHODS = flags.DEFINE_list("methods", list(names.ITERATIVE_ALGORITHMS),
                             "Iterative prune-retrain methods: wt weight thresholding (global "
                             "|w|), ft filter thresholding (per-layer filter L1 norm; 003).")
_CYCLES = flags.DEFINE_integer("cycles", None,
                               "Prune-retrain cycles (default: the preset's; digits 6, paper "
                               "presets the released 23).", lower_bound=1)
_KEEP_ALPHA = flags.DEFINE_float("keep_alpha", None,
                                 "Constant keep fraction per cycle instead of the released "
                                 "sequence (keep alpha^n after n cycles; SPEC §6.5).")
_WARMUP_EPOCHS = flags.DEFINE_float("warmup_epochs", None,
                                    "Linear LR warm-up epochs of each retraining (003: 5).",
                                    lower_bound=0)
_RETRAIN_STEPS = flags.DEFINE_integer("retrain_steps", None,
                                      "Steps of each retraining (default: the preset's full "
                                      "schedule, as 003).", lower_bound=1)
_QUANT = flags.DEFINE_list("quantizations", None,
                           "Post-training formats of dense members (default: SPEC §2.3).")
_PRUNED_QUANT = flags.DEFINE_list("pruned_quantizations", None,
                                  "Formats of pruned members besides float32 (default: the "
                                  "--quantizations; 'none': float32 only).")
_CORRUPTIONS = flags.DEFINE_list("corruptions", None,
                                 "Corruptions to evaluate (default: all 19; 'none': none).")
_SEVERITIES = flags.DEFINE_list("severities", None, "Corruption severities (1-5).")
_ROBUSTNESS = flags.DEFINE_enum(
    "robustness", "generated", ["generated", "published"],
    "generated = corrupt the eval split here (tf_forget/corruptions); published = read the "
    "data set's published suites instead (cifar10: CIFAR-10-C + CIFAR-10.1; imagenet2012: tfds' "
    "imagenet2012_corrupted + ImageNet-A, 000 Table 8), from --data_dir.")
_ROBUST_TRAINING = flags.DEFINE_bool(
    "robust_training", False,
    "003 §6 / SPEC §6.8: train and retrain with one corruption per image drawn uniformly from "
    f"{', '.join(robust_training.ROBUST_TRAIN_CORRUPTIONS)} at severity 3; evaluate (unless "
    f"--corruptions) {', '.join(robust_training.ROBUST_TEST_CORRUPTIONS)} at --severities "
    "(default 3).")
_NOISE = flags.DEFINE_list("noise_levels", None,
                           "l-inf noise levels ε on the normalized input, ascending, e.g. "
                           "0,0.1,0.2 (default: SPEC §6.7 grid, thinned for digits; 'none': "
                           "no noise evaluation).")
_NOISE_DRAWS = flags.DEFINE_integer("noise_draws", None,
                                    "Noise draws per example and level (default 100; 10 on "
                                    "digits).", lower_bound=1)
_NOISE_EXAMPLES = flags.DEFINE_integer("noise_examples", None,
                                       "Examples evaluated under noise, at most (default "
                                       "1000).", lower_bound=1)
_STEPS = flags.DEFINE_integer("steps", None, "Override the preset's steps.", lower_bound=1)
_SEED = flags.DEFINE_integer("population_seed", 0, "Base seed of the population.",
                             lower_bound=0)
_DATA_DIR = flags.DEFINE_string("data_dir", None, "tfds data directory.")
_IMAGE_SIZE = flags.DEFINE_list("image_size", None,
                                "Resize inputs to H,W (with --reference: the model's input "
                                "size, which is the default).")
_EXECUTOR = flags.DEFINE_enum(
    "executor", "local", sorted(executor_lib.EXECUTORS),
    "Where the work runs: local = a process pool of --workers; ray = Ray core tasks at "
    "--ray_address; inline = this process, one unit after another. All give the same bytes.")
_WORKERS = flags.DEFINE_integer("workers", None,
                                "Worker processes of --executor=local (default: every core; "
                                "0 = inline), CPUs of a Ray started here.", lower_bound=0)
_RAY_ADDRESS = flags.DEFINE_string("ray_address", None,
                                   "Ray cluster: auto, ray://host:port (default: start a "
                                   "local Ray). Only with --executor=ray.")
_THREADS = flags.DEFINE_integer("num_threads", 2, "TFLite interpreter threads.",
                                lower_bound=1, upper_bound=64)
_DEPLOY_ALL = flags.DEFINE_bool("deploy_all_members", False,
                                "Ship every member's file, not only member 0's.")
_DEPLOY_ENCODING = flags.DEFINE_enum(
    "deploy_encoding", "auto", ["auto", "plain", "sparse"],
    "Shipped encoding: auto = the sparse twin where it is smaller, predicts the same and is "
    "within --max_latency_ratio of plain; plain (no sparse twins); sparse (whenever equal).")
_MAX_LATENCY = flags.DEFINE_float("max_latency_ratio", 1.5,
                                  "Largest sparse / plain median latency 'auto' accepts.",
                                  lower_bound=1e-6)
_REMEASURE = flags.DEFINE_bool(
    "remeasure_latency", False,
    "Time the plain and sparse files again although a decision for the same files and settings "
    "is recorded in eval/encodings.json (by default a re-run keeps the recorded choice).")
_MAX_DROP = flags.DEFINE_float("max_accuracy_drop", None,
                               "Gate: max top-1 drop vs dense, in points (0.01 = 1 pt).",
                               lower_bound=0.0, upper_bound=1.0)
_MAX_FNR = flags.DEFINE_float("max_subgroup_fnr_increase", None,
                              "Gate: max FNR increase of a protected subgroup (fraction).",
                              lower_bound=0.0, upper_bound=1.0)
_MAX_SIG = flags.DEFINE_integer("max_significant_classes", None,
                                "Gate: max classes with a significant recall change.",
                                lower_bound=0)
_MAX_FLIP = flags.DEFINE_float(
    "max_flip_rate", None,
    "Gate: max share of test examples whose top-1 label differs from the dense reference's "
    "(broken + fixed + changed over n; 0.01 = 1%).", lower_bound=0.0, upper_bound=1.0)
_MAX_KL = flags.DEFINE_float(
    "max_kl", None,
    "Gate: max mean KL(reference || file) of the softmax outputs over the test examples, in "
    "nats (from the saved logits).", lower_bound=0.0)
# 000's human study (§3.3, Table 7 / Figure 5; issue #26; tf_forget/report/human_study.py).
_ANN_EXPORT = flags.DEFINE_string(
    "annotation_export", None,
    "Write a blind-annotation export of 000's human study to this directory: sheet/ for the "
    "annotators (shuffled images, label, annotations.csv, sheet.html), key.json kept apart.")
_ANNOTATIONS = flags.DEFINE_string(
    "annotations", None,
    "A filled sheet/annotations.csv: adds 000 Table 7 / Figure 5 (tables/human_study.csv).")
_ANN_KEY = flags.DEFINE_string(
    "annotation_key", None,
    "The export's key.json (default: the one beside the sheet/ the annotations sit in, or in "
    "--annotation_export).")
_ANN_VARIANT = flags.DEFINE_string(
    "annotation_variant", None,
    "Variant of the study (default: the one with the most PIEs; reading back: the key's).")
_ANN_GROUP = flags.DEFINE_enum(
    "annotation_group", None, ["pie", "cie"],
    "pie (000: modal label changed) or cie (Taxicab p90 with d_T > 0, 004 §3.2); default pie.")
_ANN_PER_GROUP = flags.DEFINE_integer(
    "annotation_per_group", None, "Examples per group, both groups alike (default 100).",
    lower_bound=1)
_ANN_SEED = flags.DEFINE_integer("annotation_seed", None, "Sample seed (default 0).",
                                 lower_bound=0)
_ANN_COLUMNS = flags.DEFINE_list(
    "annotation_columns", None, "More 0/1 attribute columns on the sheet, after 000's.")

_REPAIR = flags.DEFINE_list(
    "repair", [], "Also make and audit repaired files of each full int8 file that forgot "
    "something significant (more than 3 broken examples, McNemar p <= 0.05): float<N> (the N "
    "ops whose quantization broke most of the examples it forgot kept in float), cle "
    "(cross-layer equalization first: no bytes), int16x8 (16-bit activations), auto (a search: "
    "cle, then ops in float in causal order, until the gates hold or --max_repair_size; chosen "
    "on one half of the test examples, reported on the other). E.g. auto or cle,float1,float2.")
_MAX_REPAIR_SIZE = flags.DEFINE_float(
    "max_repair_size", None, "--repair=auto keeps no more ops in float than keep the file "
    "within this many times the full int8 file's bytes (default 1.5).", lower_bound=1.0)
_REPAIR_ALWAYS = flags.DEFINE_bool(
    "repair_always", False, "With --repair: repair every full int8 file, also one that "
    "forgot nothing significant (to measure what a repair costs).")

# Your own model, files and data (issue #28; eval/user_plan.py).
_REFERENCE = flags.DEFINE_list(
    "reference", None,
    "Your model instead of trained populations: .keras / .h5 files, SavedModel directories or "
    "float .tflite files, one per independently trained network (K; usually one).")
_CANDIDATE = flags.DEFINE_multi_string(
    "candidate", [], "NAME=PATH[,PATH...]: your own .tflite files (one per --reference), audited "
    "as they are; repeatable. Reported as the variant user_<NAME>.")
_COMPRESS = flags.DEFINE_list(
    "compress", [], "Formats tf_forget makes from Keras references: float16, dynamic_int8, "
    "full_int8 (full_int8 calibrates on 100 train examples, or on --calibration).")
_MAX_PIXELS = flags.DEFINE_integer(
    "max_image_pixels", 50_000_000,
    "The largest image (width x height) of your data the audit accepts; a larger one (a "
    "decompression bomb, or a photo that needs resizing first) is refused before anything is "
    "written.", lower_bound=1)
_CALIBRATION = flags.DEFINE_string(
    "calibration", None, "Data whose 100 examples (evenly spaced) calibrate "
    "--compress=full_int8, spelled like --dataset (folder:PATH, tfds:NAME[:SPLIT], "
    "tfrecord:GLOB); default: the train split.")
_TRAIN = flags.DEFINE_string(
    "train", None, "Labelled data that --pruning=oneshot of your Keras --reference reads for the "
    "gradient g and fine-tuning, spelled like --dataset (folder:PATH, tfds:NAME[:SPLIT], "
    "tfrecord:GLOB): its train split if it has one, else its only split.")
_CLASS_NAMES = flags.DEFINE_list(
    "class_names", None, "Your model's classes in output order (default: labels.txt in the "
    "folder, else the sorted class folders).")
_ATTRIBUTES = flags.DEFINE_string(
    "attributes", None, "CSV of per-example attributes (column id or path, then binary or "
    "categorical columns) for the subgroup tables and gates.")
_PROTECTED = flags.DEFINE_list("protected", None,
                               "Attributes the subgroup audit and gates cross.")
_OUTPUT_INDEX = flags.DEFINE_integer("output_index", None,
                                     "The output to audit, for a model with several (in each "
                                     "file's own output order).",
                                     lower_bound=0)
_PREPROCESS = flags.DEFINE_string(
    "preprocess", None, "What your model takes from the pixels, if it does not normalize "
    "itself: unit (x/255), symmetric (x/127.5-1), imagenet_caffe, imagenet_torch, or "
    "MODULE:FUNCTION, which runs your code: the audit imports MODULE (running its top-level "
    "code) and calls FUNCTION, a Python function of your own (not of the standard library), "
    "on uint8 batches [N, H, W, C]; it must return the model's input, [N, H, W, C] numbers "
    "(checked on test images before anything is written).")
_TRUST_CODE = flags.DEFINE_bool(
    "trust_model_code", False, "Runs the model's own Python code (Lambda layers, custom "
    "layers) while loading it. Without it, a --reference holding a Lambda layer or a layer "
    "or object that is not a built-in Keras class is refused before anything is loaded or "
    "written, and .keras files load in Keras' safe mode.")
_INPUT_SCALING_CHECK = flags.DEFINE_enum(
    "input_scaling_check", "on", ["on", "off"], "Before the audit, run your --reference on 256 "
    "test images under the given --preprocess and every other standard one (raw pixels, unit, "
    "symmetric, imagenet_caffe, imagenet_torch) and refuse, naming the likely --preprocess, "
    "when the given one scores near chance or far below another; off: audit as given.")
# Flags that describe a population tf_forget trains: refused with --reference.
TRAINING_FLAGS = ("preset", "model", "members", "variants", "sparsities", "steps")


@flags.validator("sparsities", "every sparsity must be a number in (0, 1)")
def _check_sparsities(values):
  try:
    return values is None or all(0.0 < float(v) < 1.0 for v in values)
  except ValueError:
    return False


@flags.validator("ratios", "every ratio must be a number > 1")
def _check_ratios(values):
  try:
    return all(float(v) > 1.0 for v in values)
  except ValueError:
    return False


@flags.validator("algorithms", "algorithms must be among " + ", ".join(names.ONESHOT_ALGORITHMS))
def _check_algorithms(values):
  return bool(values) and all(v in names.ONESHOT_ALGORITHMS for v in values)


@flags.validator("pruning", "pruning must be among " + ", ".join(PRUNING_KINDS))
def _check_pruning(values):
  return bool(values) and all(v in PRUNING_KINDS for v in values)


@flags.validator("methods", "methods must be among " + ", ".join(names.ITERATIVE_ALGORITHMS))
def _check_methods(values):
  return bool(values) and all(v in names.ITERATIVE_ALGORITHMS for v in values)


@flags.validator("keep_alpha", "keep_alpha must be in (0, 1)")
def _check_keep_alpha(value):
  return value is None or 0.0 < value < 1.0


@flags.validator("severities", "severities must be integers 1-5")
def _check_severities(values):
  return values is None or all(v.isdigit() and 1 <= int(v) <= 5 for v in values)


@flags.validator("noise_levels", "noise levels must be 'none' or ascending numbers >= 0")
def _check_noise(values):
  if values is None or values == ["none"]:
    return True
  try:
    eps = [float(v) for v in values]
  except ValueError:
    return False
  return all(e >= 0 for e in eps) and all(b > a for a, b in zip(eps, eps[1:]))


def _finite_or_none(value):
  return value is None or math.isfinite(value)


flags.register_validator("image_size", cli_app.image_size_ok, cli_app.IMAGE_SIZE_MESSAGE)
flags.register_validator(
    "repair", lambda v: all(names.repair_ok(x.strip()) for x in v),
    f"--repair must be repairs ({names.REPAIR_NAMES}), e.g. auto or cle,float1")
for _gate in ("max_accuracy_drop", "max_subgroup_fnr_increase", "max_flip_rate", "max_kl"):
  flags.register_validator(_gate, _finite_or_none, f"--{_gate} must be a finite number")


@flags.multi_flags_validator(["executor", "ray_address"],
                             "--ray_address needs --executor=ray")
def _check_ray_address(values):
  return values["ray_address"] is None or values["executor"] == "ray"


@flags.multi_flags_validator(
    ["annotation_export", "annotations", "annotation_key", "annotation_variant",
     "annotation_group", "annotation_per_group", "annotation_seed", "annotation_columns"],
    "--annotation_* flags need --annotation_export or --annotations")
def _check_annotation_flags(values):
  return (values["annotation_export"] is not None or values["annotations"] is not None
          or all(v is None for v in values.values()))


def _human_study():
  """`tf_forget.report.human_study.Options` of the --annotation* flags, or None.

  Checked now (a missing annotations or key file, a bad column name: one line before anything
  is trained or written); matching them against the run is the report's (`human_study`).
  """
  if _ANN_EXPORT.value is None and _ANNOTATIONS.value is None:
    return None
  from tf_forget.report import human_study  # pylint: disable=g-import-not-at-top
  options = human_study.Options(
      export_dir=filesystem.user_path(_ANN_EXPORT.value),
      annotations=filesystem.user_path(_ANNOTATIONS.value),
      key=filesystem.user_path(_ANN_KEY.value), variant=_ANN_VARIANT.value,
      group=_ANN_GROUP.value, per_group=_ANN_PER_GROUP.value, seed=_ANN_SEED.value,
      columns=tuple(_ANN_COLUMNS.value or ()))
  human_study.check_options(options)
  return options


def _user_models():
  """`eval.user_plan.UserModels` of the --reference / --candidate flags, or None.

  Raises:
    cli_app usage error: --candidate, --compress or a data option without --reference, or a
      training flag with it (--pruning=oneshot prunes the reference: `eval.user_prune_plan`).
  """
  from eval import user_plan  # pylint: disable=g-import-not-at-top
  if not _REFERENCE.value:
    if (_CANDIDATE.value or _COMPRESS.value or _OUTPUT_INDEX.value is not None
        or _PREPROCESS.value or _CALIBRATION.value or _TRAIN.value or _TRUST_CODE.value
        or flags.FLAGS["input_scaling_check"].present):
      raise errors.Error("--candidate, --compress, --calibration, --train, --output_index, "
                         "--preprocess, --trust_model_code and --input_scaling_check audit "
                         "your own model: give it with --reference")
    if _CLASS_NAMES.value or _ATTRIBUTES.value or _PROTECTED.value:  # else silently unused
      raise errors.Error("--class_names, --attributes and --protected describe your own data "
                         "for your own model: give it with --reference")
    return None
  given = [f for f in TRAINING_FLAGS if flags.FLAGS[f].present]
  if given or _PRUNING.value not in (["gradual"], ["oneshot"]):
    raise errors.Error(f"--{(given or ['pruning'])[0]} describes a population tf_forget trains; "
                       "with --reference your own model is audited (and pruned one-shot with "
                       "--pruning=oneshot)")
  return user_plan.UserModels(
      references=tuple(filesystem.user_path(p) for p in _REFERENCE.value),
      candidates=tuple((name, tuple(filesystem.user_path(p) for p in paths))
                       for name, paths in map(user_plan.parse_candidate, _CANDIDATE.value)),
      compress=tuple(_COMPRESS.value), class_names=tuple(_CLASS_NAMES.value or ()) or None,
      attributes=filesystem.user_path(_ATTRIBUTES.value),
      protected=tuple(_PROTECTED.value or ()) or None, output_index=_OUTPUT_INDEX.value,
      preprocess=_PREPROCESS.value, calibration=_CALIBRATION.value, train=_TRAIN.value,
      trust_model_code=_TRUST_CODE.value,
      input_scaling_check=_INPUT_SCALING_CHECK.value == "on")


def _default_out():
  """runs/<data set> (runs/folder for folder:PATH and the other spellings of your data)."""
  return os.path.join("runs", _DATASET.value.split(":", 1)[0])


def main(argv):
  del argv  # stray arguments are refused by `cli_app.run`
  keras2.enable()
  cpu_kernels.configure()
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's C++ INFO / WARNING lines
  logging.set_verbosity(logging.WARNING)
  from eval import audit_config  # pylint: disable=g-import-not-at-top
  from eval import audit_lib  # pylint: disable=g-import-not-at-top
  from eval import audit_plan  # pylint: disable=g-import-not-at-top
  variants = _VARIANTS.value
  if _SPARSITIES.value:
    variants = (variants or ["dense"]) + [f"prune_{float(t):g}" for t in _SPARSITIES.value]
  kinds = set(_PRUNING.value)
  if "both" in kinds:
    kinds |= {"gradual", "oneshot"}
  oneshot, methods = [], []
  if "oneshot" in kinds:
    oneshot = [v.name for v in names.oneshot_variants(
        _ALGORITHMS.value, [float(r) for r in _RATIOS.value])]
  if "iterative" in kinds:
    methods = list(dict.fromkeys(_METHODS.value))
  if "gradual" not in kinds and variants is None:
    variants = ["dense"]
  iterative_overrides = {
      "cycles": _CYCLES.value, "alpha": _KEEP_ALPHA.value,
      "warmup_epochs": _WARMUP_EPOCHS.value, "retrain_steps": _RETRAIN_STEPS.value}
  iterative_overrides = {k: v for k, v in iterative_overrides.items() if v is not None}
  oneshot_overrides = {
      "phases": _FINETUNE.value, "grad_batches": _GRAD_BATCHES.value,
      "exclude_classifier": _EXCLUDE_CLASSIFIER.value, "ratio_over": _RATIO_OVER.value,
      "up_formula": _UP_FORMULA.value}
  oneshot_overrides = {k: v for k, v in oneshot_overrides.items() if v is not None}
  corruptions = _CORRUPTIONS.value
  if corruptions == ["none"]:
    corruptions = []
  pruned_quant = _PRUNED_QUANT.value
  if pruned_quant == ["none"]:
    pruned_quant = []
  noise = _NOISE.value
  noise = None if noise is None else ([] if noise == ["none"] else [float(v) for v in noise])
  try:
    user = _user_models()
  except errors.Error as e:
    sys.exit(f"audit: error: {errors.one_line(e, 1000)}")
  config = audit_config.AuditConfig(
      dataset=_DATASET.value, user=user,
      out=filesystem.user_path(_OUT.value or _default_out()),
      preset=_PRESET.value, model=_MODEL.value, members=_MEMBERS.value, variants=variants,
      oneshot_variants=oneshot, oneshot_overrides=oneshot_overrides or None,
      iterative_methods=methods, iterative_overrides=iterative_overrides or None,
      quantizations=_QUANT.value, pruned_quantizations=pruned_quant, corruptions=corruptions,
      severities=[int(v) for v in _SEVERITIES.value] if _SEVERITIES.value else None,
      robustness=_ROBUSTNESS.value, robust_training=_ROBUST_TRAINING.value,
      noise_levels=noise, noise_draws=_NOISE_DRAWS.value, noise_examples=_NOISE_EXAMPLES.value,
      steps=_STEPS.value, population_seed=_SEED.value,
      data_dir=filesystem.user_path(_DATA_DIR.value),
      image_size=[int(v) for v in _IMAGE_SIZE.value] if _IMAGE_SIZE.value else None,
      gates=gates_lib.Gates(max_accuracy_drop=_MAX_DROP.value,
                            max_subgroup_fnr_increase=_MAX_FNR.value,
                            max_significant_classes=_MAX_SIG.value,
                            max_flip_rate=_MAX_FLIP.value, max_kl=_MAX_KL.value),
      deploy_members="all" if _DEPLOY_ALL.value else "first", num_threads=_THREADS.value,
      deploy_encoding=_DEPLOY_ENCODING.value, max_latency_ratio=_MAX_LATENCY.value,
      remeasure_latency=_REMEASURE.value,
      executor="inline" if _WORKERS.value == 0 and _EXECUTOR.value == "local" else
      _EXECUTOR.value, workers=_WORKERS.value,
      ray_address=_RAY_ADDRESS.value,
      repairs=names.sorted_repairs(v.strip() for v in _REPAIR.value),
      **({} if _MAX_REPAIR_SIZE.value is None else {"max_repair_size": _MAX_REPAIR_SIZE.value}),
      repair_always=_REPAIR_ALWAYS.value,
      max_image_pixels=_MAX_PIXELS.value)
  if _PLAN.value:
    try:
      print(audit_plan.plan_report(config, filesystem.user_path(_UNIT_COSTS.value)))
    except errors.Error as e:
      sys.exit(f"audit: error: {errors.one_line(e, 1000)}")
    return 0
  try:
    study = _human_study()
    _, manifest = audit_lib.run_audit(config, on_locked=console.attach, human_study=study)
  except errors.Error as e:  # bad input or artifact: one line, exit 1 (a bug keeps its traceback)
    sys.exit(f"audit: error: {errors.one_line(e, 1000)}")
  if manifest["failed_variants"]:
    sys.exit(GATE_FAILED)


if __name__ == "__main__":
  cli_app.run(main, "audit")
