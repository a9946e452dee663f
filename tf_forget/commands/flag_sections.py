"""The audit's flags, section by section of `--help`.

Each section is a function defining its flags on an `on` (`audit_flags._On`: `on.string(name,
default, help)` is absl's `DEFINE_string` on the `FlagValues` being filled); `SECTIONS` lists
them in `--help` order with their titles. `tf_forget.commands.audit_flags` defines them all, once,
for every way an audit is started.
"""

from tf_forget import executor as executor_lib
from tf_forget.artifacts import names
from tf_forget.corruptions import robust_training
from tf_forget.policy import gates
from tf_forget.policy import ship_rule
from tf_forget.prune import scores as prune_scores


def summary(on):
  """`--summary`: the audit's and `tf-forget report`'s."""
  on.string(
    "summary",
    None,
    "Also write the verdict in Markdown to this file, for a pull request or "
    "a CI job's summary: the verdict sentence, what it says of your own files, the verdict "
    "table and the failed gates (replaced atomically; a file named by $GITHUB_STEP_SUMMARY "
    "is appended to, as GitHub expects). Without --summary, $GITHUB_STEP_SUMMARY, when set, "
    "is appended to. Not with --plan.",
  )


def _what_and_where(on):
  """What to audit, and where."""
  on.string("dataset", "digits", "Data set to audit (tf_forget/data).")
  on.string("out", None, "Run directory (default: runs/<dataset>).")
  on.string(
    "config",
    None,
    "A configuration to start from: a finished run's audit.json (the whole "
    "configuration it was made with) or a tf_forget.config/1 JSON file; the flags given on "
    "the command line replace its fields (e.g. --out for a new run directory).",
  )
  on.bool(
    "plan",
    False,
    "Print the audit's cost plan (counts per stage and an estimate) and "
    "exit 0: writes nothing, needs no data on disk "
    "(tf_forget/pipeline/costs.py); with --reference, the files' "
    "inferences over the listed images and the time, no image read "
    "(tf_forget/pipeline/user_costs.py).",
  )
  on.string(
    "unit_costs",
    None,
    "Unit-cost file of --plan (default: tf_forget/pipeline/unit_costs/cpu_2core_avx512.json).",
  )
  summary(on)
  on.string("data_dir", None, "tfds data directory.")
  on.list(
    "image_size",
    None,
    "Resize inputs to H,W (with --reference: the model's input size, which is the default).",
  )
  on.integer(
    "max_image_pixels",
    50_000_000,
    "The largest image (width x height) of your data the audit accepts; a larger one (a "
    "decompression bomb, or a photo that needs resizing first) is refused before anything is "
    "written.",
  )


def _your_own(on):
  """Your own model, files and data (tf_forget/pipeline/user_plan.py)."""
  on.list(
    "reference",
    None,
    "Your model instead of trained populations: .keras / .h5 files, SavedModel directories or "
    "float .tflite files, one per independently trained network (K; usually one).",
  )
  on.multi_string(
    "candidate",
    [],
    "NAME=PATH[,PATH...]: your own .tflite files (one per --reference), audited "
    "as they are; repeatable. Reported as the variant user_<NAME>.",
  )
  on.list(
    "compress",
    [],
    "Formats tf_forget makes from Keras references: float16, dynamic_int8, "
    "full_int8 (full_int8 calibrates on 100 train examples, or on --calibration).",
  )
  on.string(
    "calibration",
    None,
    "Data whose 100 examples (evenly spaced) calibrate "
    "--compress=full_int8, spelled like --dataset (folder:PATH, tfds:NAME[:SPLIT], "
    "tfrecord:GLOB); default: the train split.",
  )
  on.string(
    "train",
    None,
    "Labelled data that --pruning=oneshot of your Keras --reference reads for the "
    "gradient g and fine-tuning, spelled like --dataset (folder:PATH, tfds:NAME[:SPLIT], "
    "tfrecord:GLOB): its train split if it has one, else its only split.",
  )
  on.string(
    "deployment_images",
    None,
    "The images your deployment sees, spelled like --dataset (folder:PATH, tfds:NAME[:SPLIT], "
    "tfrecord:GLOB), read without labels: beside a labelled --dataset, every file is also "
    "compared with your model on them, and the report puts both views side by side "
    "(docs/spec.md §8.11).",
  )
  on.enum(
    "labels",
    "auto",
    ["auto", "none"],
    "none: audit without labels (every image of --dataset, class folders ignored; the "
    "reference's decisions are the yardstick, docs/spec.md §8); auto: a folder whose images "
    "sit at its root, with no subfolder of images, has none, any other data its labels.",
  )
  on.list(
    "class_names",
    None,
    "Your model's classes in output order (default: labels.txt in the "
    "folder, else the sorted class folders).",
  )
  on.string(
    "attributes",
    None,
    "CSV of per-example attributes (column id or path, then binary or "
    "categorical columns) for the subgroup tables and gates.",
  )
  on.list("protected", None, "Attributes the subgroup audit and gates cross.")
  on.integer(
    "output_index",
    None,
    "The output to audit, for a model with several (in each file's own output order).",
  )
  on.string(
    "preprocess",
    None,
    "What your model takes from the pixels, if it does not normalize "
    "itself: unit (x/255), symmetric (x/127.5-1), imagenet_caffe, imagenet_torch, or "
    "MODULE:FUNCTION, which runs your code: the audit imports MODULE (running its top-level "
    "code) and calls FUNCTION, a Python function of your own (not of the standard library), "
    "on uint8 batches [N, H, W, C]; it must return the model's input, [N, H, W, C] numbers "
    "(checked on test images before anything is written).",
  )
  on.bool(
    "trust_model_code",
    False,
    "Runs the model's own Python code (Lambda layers, custom "
    "layers) while loading it. Without it, a --reference holding a Lambda layer or a layer "
    "or object that is not a built-in Keras class is refused before anything is loaded or "
    "written, and .keras files load in Keras' safe mode.",
  )
  on.enum(
    "input_scaling_check",
    "on",
    ["on", "off"],
    "Before the audit, run your --reference on the "
    "same test images (256, up to 2048 while the evidence is unclear) under the given "
    "--preprocess and every other standard one (raw pixels, unit, symmetric, imagenet_caffe, "
    "imagenet_torch) and refuse, naming the likely --preprocess, when another scores at least "
    "2 points higher (exact McNemar p < 0.001) or the given one near chance; an unclear gain "
    "is a caveat; off: audit as given.",
  )


def _populations(on):
  """Populations tf_forget trains."""
  on.string("preset", None, "Training protocol (default: the data set's).")
  on.string("model", None, "Model (default: the preset's).")
  on.integer("members", None, "Members per variant (K >= 2).")
  on.list("variants", None, "Trained variants, e.g. dense,prune_0.5,prune_0.9.")
  on.list("sparsities", None, "Pruning levels in (0, 1), e.g. 0.5,0.9 (adds dense).")
  on.integer("steps", None, "Override the preset's steps.")
  on.integer("population_seed", 0, "Base seed of the population.")
  on.bool(
    "robust_training",
    False,
    "003 §6 / docs/spec.md §6.8: train and retrain with one corruption per image drawn uniformly "
    f"from {', '.join(robust_training.ROBUST_TRAIN_CORRUPTIONS)} at severity 3; evaluate (unless "
    f"--corruptions) {', '.join(robust_training.ROBUST_TEST_CORRUPTIONS)} at --severities "
    "(default 3).",
  )


def _pruning(on):
  """Pruning after training (002 one-shot, 003 prune-retrain)."""
  on.list(
    "pruning",
    ["gradual"],
    "Comma-separated: gradual = pruning during training (000, the preset's or --sparsities "
    "levels); oneshot = dense members pruned after training by --algorithms to --ratios and "
    "fine-tuned (002); iterative = dense members pruned and retrained cycle after cycle by "
    "--methods (003 Algorithm 1); both = gradual,oneshot.",
  )
  on.list(
    "ratios",
    ["2", "4", "10", "20", "50"],
    "One-shot compression ratios r > 1 (weights before / after; 002).",
  )
  on.list(
    "algorithms",
    list(names.ONESHOT_ALGORITHMS),
    "One-shot algorithms: mp magnitude, gp gradient, up undecayed, rp random (002 §3).",
  )
  on.string(
    "finetune",
    None,
    "One-shot fine-tuning phases <epochs>@<lr>,... (default: the "
    "preset's, e.g. digits 3@0.05,2@0.005,2@0.0005).",
  )
  on.integer(
    "grad_batches",
    None,
    "Training batches averaged for GP/UP's gradient (default 1, docs/spec.md §6.2).",
  )
  on.bool("exclude_classifier", None, "Leave the classifier unpruned (002's reference).")
  on.enum(
    "ratio_over",
    None,
    ["prunable", "all"],
    "Count one-shot ratios over the prunable kernels (default) "
    "or all parameters (002's reference; docs/spec.md §6.3).",
  )
  on.enum(
    "up_formula",
    None,
    list(prune_scores.UP_FORMULAS),
    "UP score: the authors' code (default) or 002's derivation "
    "line read literally (docs/spec.md §6.1).",
  )
  on.list(
    "methods",
    list(names.ITERATIVE_ALGORITHMS),
    "Iterative prune-retrain methods: wt weight thresholding (global "
    "|w|), ft filter thresholding (per-layer filter L1 norm; 003).",
  )
  on.integer(
    "cycles",
    None,
    "Prune-retrain cycles (default: the preset's; digits 6, paper presets the released 23).",
  )
  on.float(
    "keep_alpha",
    None,
    "Constant keep fraction per cycle instead of the released "
    "sequence (keep alpha^n after n cycles; docs/spec.md §6.5).",
  )
  on.float("warmup_epochs", None, "Linear LR warm-up epochs of each retraining (003: 5).")
  on.integer(
    "retrain_steps", None, "Steps of each retraining (default: the preset's full schedule, as 003)."
  )


def _formats(on):
  """Post-training formats."""
  on.list(
    "quantizations", None, "Post-training formats of dense members (default: docs/spec.md §2.3)."
  )
  on.list(
    "pruned_quantizations",
    None,
    "Formats of pruned members besides float32 (default: the "
    "--quantizations; 'none': float32 only).",
  )


def _robustness(on):
  """Robustness and noise."""
  on.list("corruptions", None, "Corruptions to evaluate (default: all 19; 'none': none).")
  on.list("severities", None, "Corruption severities (1-5).")
  on.enum(
    "robustness",
    "generated",
    ["generated", "published"],
    "generated = corrupt the eval split here (tf_forget/corruptions); published = read the "
    "data set's published suites instead (cifar10: CIFAR-10-C + CIFAR-10.1; imagenet2012: tfds' "
    "imagenet2012_corrupted + ImageNet-A, 000 Table 8), from --data_dir.",
  )
  on.list(
    "noise_levels",
    None,
    "l-inf noise levels ε on the normalized input, ascending, e.g. "
    "0,0.1,0.2 (default: docs/spec.md §6.7 grid, thinned for digits; 'none': "
    "no noise evaluation).",
  )
  on.integer("noise_draws", None, "Noise draws per example and level (default 100; 10 on digits).")
  on.integer("noise_examples", None, "Examples evaluated under noise, at most (default 1000).")


def _gates(on):
  """Gates (exit status 3 when one fails)."""
  for gate in gates.GATES:  # one flag per gate, off by default
    getattr(on, gate.kind)(gate.name, None, gate.help)


def _why_and_repairs(on):
  """Why it forgot, and repairs."""
  on.list(
    "repair",
    [],
    "Also make and audit repaired files of each full int8 file that forgot "
    "something significant (more than 3 broken examples, McNemar p <= 0.05): float<N> (the N "
    "ops whose quantization broke most of the examples it forgot kept in float), cle "
    "(cross-layer equalization first: no bytes), int16x8 (16-bit activations), auto (a search: "
    "cle, then ops in float in causal order, until the gates hold or --max_repair_size; chosen "
    "on one half of the test examples, reported on the other). E.g. auto or cle,float1,float2.",
  )
  on.float(
    "max_repair_size",
    1.5,
    "--repair=auto keeps no more ops in float than keep the file "
    "within this many times the full int8 file's bytes (default 1.5).",
  )
  on.bool(
    "repair_always",
    False,
    "With --repair: repair every full int8 file, also one that "
    "forgot nothing significant (to measure what a repair costs).",
  )


def _bundle(on):
  """Deployment bundle."""
  on.enum(
    "target",
    "cpu",
    list(names.TARGETS),
    "Where the shipped file runs: cpu = LiteRT with XNNPACK; integer_only = accelerators and "
    "microcontrollers that run only int8 ops with int8/uint8 I/O; gpu = the LiteRT GPU "
    "delegate. A file the target cannot run is not recommended.",
  )
  on.enum(
    "size",
    "bytes",
    list(names.SIZE_MEASURES),
    "The size the ship rule weighs: bytes = the file; gzip = its compressed download.",
  )
  on.float(
    "max_latency_ratio",
    ship_rule.DEFAULT_MAX_LATENCY_RATIO,
    "A recommended file is at most this many times slower than the float reference "
    "(batch 1 and --latency_batch, this machine's runtime).",
  )
  on.integer("latency_batch", 64, "The batch timed besides batch 1.")
  on.bool("deploy_all_members", False, "Ship every member's file, not only member 0's.")
  on.enum(
    "deploy_encoding",
    "auto",
    ["auto", "plain", "sparse"],
    "Shipped encoding: auto = the sparse twin where it is smaller, predicts the same and is "
    "within --max_sparse_latency_ratio of plain; plain (no sparse twins); sparse (whenever equal).",
  )
  on.float("max_sparse_latency_ratio", 1.5, "Largest sparse / plain median latency 'auto' accepts.")
  on.integer("num_threads", 2, "TFLite interpreter threads.")
  on.bool(
    "remeasure_latency",
    False,
    "Time the plain and sparse files again although a decision for the same files and settings "
    "is recorded in eval/encodings.json (by default a re-run keeps the recorded choice).",
  )


def _where_it_runs(on):
  """Where the work runs."""
  on.enum(
    "executor",
    "local",
    sorted(executor_lib.EXECUTORS),
    "Where the work runs: local = a process pool of --workers; ray = Ray core tasks at "
    "--ray_address; inline = this process, one unit after another. All give the same bytes.",
  )
  on.integer(
    "workers",
    None,
    "Worker processes of --executor=local (default: every core; "
    "0 = inline), CPUs of a Ray started here.",
  )
  on.string(
    "ray_address",
    None,
    "Ray cluster: auto, ray://host:port (default: start a local Ray). Only with --executor=ray.",
  )


def _human_study(on):
  """000's human study (§3.3, Table 7 / Figure 5; tf_forget/report/human_study.py)."""
  on.string(
    "annotation_export",
    None,
    "Write a blind-annotation export of 000's human study to this directory: sheet/ for the "
    "annotators (shuffled images, label, annotations.csv, sheet.html), key.json kept apart.",
  )
  on.string(
    "annotations",
    None,
    "A filled sheet/annotations.csv: adds 000 Table 7 / Figure 5 (tables/human_study.csv).",
  )
  on.string(
    "annotation_key",
    None,
    "The export's key.json (default: the one beside the sheet/ the annotations sit in, or in "
    "--annotation_export).",
  )
  on.string(
    "annotation_variant",
    None,
    "Variant of the study (default: the one with the most PIEs; reading back: the key's).",
  )
  on.enum(
    "annotation_group",
    None,
    ["pie", "cie"],
    "pie (000: modal label changed) or cie (Taxicab p90 with d_T > 0, 004 §3.2); default pie.",
  )
  on.integer("annotation_per_group", None, "Examples per group, both groups alike (default 100).")
  on.integer("annotation_seed", None, "Sample seed (default 0).")
  on.list("annotation_columns", None, "More 0/1 attribute columns on the sheet, after 000's.")


# The flags by --help section, in order.
SECTIONS = (
  ("what to audit, and where", _what_and_where),
  ("your own model, files and data", _your_own),
  ("populations tf_forget trains", _populations),
  ("pruning after training (002 one-shot, 003 prune-retrain)", _pruning),
  ("post-training formats", _formats),
  ("robustness and noise", _robustness),
  ("gates (exit status 3 when one fails)", _gates),
  ("why it forgot, and repairs", _why_and_repairs),
  ("deployment bundle", _bundle),
  ("where the work runs", _where_it_runs),
  ("000's human study", _human_study),
)
