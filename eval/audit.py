r"""The audit command (a thin binary over `tf_forget.api`).

  bazel run //eval:audit                       # embedded default: digits, offline
  bazel run //eval:audit -- --dataset=digits_biased
  bazel run //eval:audit -- --dataset=celeb_a  # the paper's protocol (needs the tfds data)
  bazel run //eval:audit -- --plan --dataset=imagenet2012  # its cost plan (no data needed)
  bazel run //eval:audit -- --pruning=oneshot --ratios=2,4,10,20,50  # 002: prune after training
  bazel run //eval:audit -- --dataset=cifar10 --robustness=published  # CIFAR-10-C, CIFAR-10.1
  bazel run //eval:audit -- --pruning=iterative --methods=wt,ft      # 003: prune-retrain cycles
  bazel run //eval:audit -- --pruning=iterative --robust_training    # 003 §6: robust (re)training
  bazel run //eval:audit -- --config=runs/digits/audit.json --out=/tmp/again  # a run again

The flags are read into one configuration (`tf_forget.config.flag_values`, `tf_forget.config.
tree.AuditConfig`); `--config=PATH` starts from a configuration file or a finished run's
`audit.json`, and the flags given replace its fields. The audit is `tf_forget.api.audit`.

Exit status: 0 when every gate passes, 3 when a gate fails, 1 on bad input (one line), 130 / 143
when interrupted by Ctrl-C / SIGTERM (finished work is kept: run the same command to resume).
TensorFlow's own output goes to <out>/logs/ (`--verbose`: the terminal); see `tf_forget.cli`.
"""

# pylint: disable=g-import-not-at-top,wrong-import-position
from tf_forget.cli import startup

if __name__ == "__main__":  # Ctrl-C / SIGTERM during the imports below: one line, 130 / 143
  startup.guard("audit")

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
from tf_forget.config import flag_values
from tf_forget.corruptions import robust_training
from tf_forget.prune import scores as prune_scores
# pylint: enable=g-import-not-at-top,wrong-import-position

GATE_FAILED = 3

_DATASET = flags.DEFINE_string("dataset", "digits", "Data set to audit (tf_forget/data).")
_OUT = flags.DEFINE_string("out", None, "Run directory (default: runs/<dataset>).")
_CONFIG = flags.DEFINE_string(
    "config", None, "A configuration to start from: a finished run's audit.json (the whole "
    "configuration it was made with) or a tf_forget.config/1 JSON file; the flags given on "
    "the command line replace its fields (e.g. --out for a new run directory).")
_PLAN = flags.DEFINE_bool("plan", False,
                          "Print the audit's cost plan (counts per stage and an estimate) and "
                          "exit 0: writes nothing, needs no data on disk "
                          "(tf_forget/pipeline/costs.py); with --reference, the files' "
                          "inferences over the listed images and the time, no image read "
                          "(tf_forget/pipeline/user_costs.py).")
_UNIT_COSTS = flags.DEFINE_string("unit_costs", None,
                                  "Unit-cost file of --plan (default: "
                                  "tf_forget/pipeline/unit_costs/cpu_2core_avx512.json).")
_PRESET = flags.DEFINE_string("preset", None, "Training protocol (default: the data set's).")
_MODEL = flags.DEFINE_string("model", None, "Model (default: the preset's).")
_MEMBERS = flags.DEFINE_integer("members", None, "Members per variant (K >= 2).")
_VARIANTS = flags.DEFINE_list("variants", None,
                              "Trained variants, e.g. dense,prune_0.5,prune_0.9.")
_SPARSITIES = flags.DEFINE_list("sparsities", None,
                                "Pruning levels in (0, 1), e.g. 0.5,0.9 (adds dense).")
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
                                     "(default 1, SPEC §6.2).")
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
                               "presets the released 23).")
_KEEP_ALPHA = flags.DEFINE_float("keep_alpha", None,
                                 "Constant keep fraction per cycle instead of the released "
                                 "sequence (keep alpha^n after n cycles; SPEC §6.5).")
_WARMUP_EPOCHS = flags.DEFINE_float("warmup_epochs", None,
                                    "Linear LR warm-up epochs of each retraining (003: 5).")
_RETRAIN_STEPS = flags.DEFINE_integer("retrain_steps", None,
                                      "Steps of each retraining (default: the preset's full "
                                      "schedule, as 003).")
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
                                    "digits).")
_NOISE_EXAMPLES = flags.DEFINE_integer("noise_examples", None,
                                       "Examples evaluated under noise, at most (default "
                                       "1000).")
_STEPS = flags.DEFINE_integer("steps", None, "Override the preset's steps.")
_SEED = flags.DEFINE_integer("population_seed", 0, "Base seed of the population.")
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
                                "0 = inline), CPUs of a Ray started here.")
_RAY_ADDRESS = flags.DEFINE_string("ray_address", None,
                                   "Ray cluster: auto, ray://host:port (default: start a "
                                   "local Ray). Only with --executor=ray.")
_THREADS = flags.DEFINE_integer("num_threads", 2, "TFLite interpreter threads.")
_DEPLOY_ALL = flags.DEFINE_bool("deploy_all_members", False,
                                "Ship every member's file, not only member 0's.")
_DEPLOY_ENCODING = flags.DEFINE_enum(
    "deploy_encoding", "auto", ["auto", "plain", "sparse"],
    "Shipped encoding: auto = the sparse twin where it is smaller, predicts the same and is "
    "within --max_latency_ratio of plain; plain (no sparse twins); sparse (whenever equal).")
_MAX_LATENCY = flags.DEFINE_float("max_latency_ratio", 1.5,
                                  "Largest sparse / plain median latency 'auto' accepts.")
_REMEASURE = flags.DEFINE_bool(
    "remeasure_latency", False,
    "Time the plain and sparse files again although a decision for the same files and settings "
    "is recorded in eval/encodings.json (by default a re-run keeps the recorded choice).")
_MAX_DROP = flags.DEFINE_float("max_accuracy_drop", None,
                               "Gate: max top-1 drop vs dense, in points (0.01 = 1 pt).")
_MAX_FNR = flags.DEFINE_float("max_subgroup_fnr_increase", None,
                              "Gate: max FNR increase of a protected subgroup (fraction).")
_MAX_SIG = flags.DEFINE_integer("max_significant_classes", None,
                                "Gate: max classes with a significant recall change.")
_MAX_FLIP = flags.DEFINE_float(
    "max_flip_rate", None,
    "Gate: max share of test examples whose top-1 label differs from the dense reference's "
    "(broken + fixed + changed over n; 0.01 = 1%).")
_MAX_KL = flags.DEFINE_float(
    "max_kl", None,
    "Gate: max mean KL(reference || file) of the softmax outputs over the test examples, in "
    "nats (from the saved logits).")
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
    "annotation_per_group", None, "Examples per group, both groups alike (default 100).")
_ANN_SEED = flags.DEFINE_integer("annotation_seed", None, "Sample seed (default 0).")
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
    "max_repair_size", 1.5, "--repair=auto keeps no more ops in float than keep the file "
    "within this many times the full int8 file's bytes (default 1.5).")
_REPAIR_ALWAYS = flags.DEFINE_bool(
    "repair_always", False, "With --repair: repair every full int8 file, also one that "
    "forgot nothing significant (to measure what a repair costs).")

# Your own model, files and data (issue #28; tf_forget/pipeline/user_plan.py).
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
    "written.")
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
                                     "file's own output order).")
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


def _values():
  """({flag: value} of every audit flag, the flags given on the command line)."""
  names = [f for f in flag_values.FLAG_PATHS] + list(flag_values.USER_FLAGS) + list(
      flag_values.STUDY_FLAGS) + list(flag_values.VARIANT_FLAGS) + [
          "deploy_all_members", "executor", "workers"]
  given = lambda f: flags.FLAGS[f].present or not flags.FLAGS[f].using_default_value
  return {f: flags.FLAGS[f].value for f in names}, {f for f in names if given(f)}


def main(argv):
  del argv  # stray arguments are refused by `cli_app.run`
  keras2.enable()
  cpu_kernels.configure()
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's C++ INFO / WARNING lines
  logging.set_verbosity(logging.WARNING)
  from tf_forget import api  # pylint: disable=g-import-not-at-top
  try:
    base = api.load_config(filesystem.user_path(_CONFIG.value)) if _CONFIG.value else None
    config = flag_values.config_from_flags(*_values(), base=base)
    flag_values.check(config)
    if _PLAN.value:
      print(api.plan(config, filesystem.user_path(_UNIT_COSTS.value)))
      return 0
    result = api.audit(config, on_locked=console.attach)
  except errors.Error as e:  # bad input or artifact: one line, exit 1 (a bug keeps its traceback)
    sys.exit(f"audit: error: {errors.one_line(e, 1000)}")
  if not result.passed:
    sys.exit(GATE_FAILED)


# --help, section by section (every flag of this file under one title).
HELP_SECTIONS = (
    ("what to audit, and where", ["dataset", "out", "config", "plan", "unit_costs", "data_dir",
                                  "image_size", "max_image_pixels", "verbose"]),
    ("your own model, files and data", [
        "reference", "candidate", "compress", "calibration", "train", "class_names",
        "attributes", "protected", "output_index", "preprocess", "trust_model_code",
        "input_scaling_check"]),
    ("populations tf_forget trains", ["preset", "model", "members", "variants", "sparsities",
                                      "steps", "population_seed", "robust_training"]),
    ("pruning after training (002 one-shot, 003 prune-retrain)", [
        "pruning", "ratios", "algorithms", "finetune", "grad_batches", "exclude_classifier",
        "ratio_over", "up_formula", "methods", "cycles", "keep_alpha", "warmup_epochs",
        "retrain_steps"]),
    ("post-training formats", ["quantizations", "pruned_quantizations"]),
    ("robustness and noise", ["corruptions", "severities", "robustness", "noise_levels",
                              "noise_draws", "noise_examples"]),
    ("gates (exit status 3 when one fails)", [
        "max_accuracy_drop", "max_subgroup_fnr_increase", "max_significant_classes",
        "max_flip_rate", "max_kl"]),
    ("why it forgot, and repairs", ["repair", "max_repair_size", "repair_always"]),
    ("deployment bundle", ["deploy_all_members", "deploy_encoding", "max_latency_ratio",
                           "num_threads", "remeasure_latency"]),
    ("where the work runs", ["executor", "workers", "ray_address"]),
    ("000's human study", ["annotation_export", "annotations", "annotation_key",
                           "annotation_variant", "annotation_group", "annotation_per_group",
                           "annotation_seed", "annotation_columns"]),
)


def _help():
  """`--help`: `HELP_SECTIONS` with each flag's help and default (`cli_app.help_text`).

  Raises:
    AssertionError: a flag of this file in no section (a bug here, said loudly).
  """
  listed = {f for _, names in HELP_SECTIONS for f in names}
  own = flags.FLAGS.flags_by_module_dict().get(sys.argv[0], [])
  missing = sorted(f.name for f in own if f.name not in listed)
  if missing:
    raise AssertionError(f"flags in no --help section: {', '.join(missing)}")
  entries = lambda names: [(n, flags.FLAGS[n].help, None if flags.FLAGS[n].default is None
                            else flags.FLAGS[n].default_as_str) for n in names]
  return cli_app.help_text(__doc__, [(title, entries(names)) for title, names in HELP_SECTIONS])


if __name__ == "__main__":
  cli_app.run(main, "audit", _help)
