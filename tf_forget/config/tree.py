"""The one configuration of an audit: `AuditConfig`, a tree of frozen sections.

    config = AuditConfig(out="runs/x", data=Data(dataset="digits_biased"),
                         noise=Noise(levels=()), execution=Execution(executor="inline"))
    config.to_json()                     # the JSON the run records (audit.json, report.json)
    AuditConfig.from_json(doc)           # back, exactly: from_json(c.to_json()) == c
    config.validate()                    # () or the one-line problems (`checks.problems`)
    with_overrides(config, {"noise.draws": 5})

Every section has the defaults of the audit's flags (`tf_forget/commands/audit_flags.py`; the
flag of each field: `flag_values.FLAG_PATHS`); None means "the data set's protocol's"
(`tf_forget.data.protocols`, docs/spec.md §1.1, §1.5, §2.3, §3.6, §6.7). What a run directory was
made with, the subset of this tree a re-run may reuse artifacts under, is
`tf_forget.pipeline.run_identity.audit_identity`.
"""

import dataclasses
from typing import Mapping, Optional, Tuple

from tf_forget.artifacts import audit_json
from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.config import checks
from tf_forget.config import codec
from tf_forget.data import fingerprint
from tf_forget.policy import gates as gates_lib
from tf_forget.policy import human_study_options
from tf_forget.policy import ship_rule

CONFIG_SCHEMA = "tf_forget.config/1"  # a configuration file of its own (`load`)
DEFAULT_MAX_REPAIR_SIZE = 1.5  # --max_repair_size: times the plain full int8 file
DEFAULT_MAX_SPARSE_LATENCY_RATIO = 1.5  # --max_sparse_latency_ratio: sparse / plain
MAX_FILE_BYTES = 16_000_000  # a configuration file (`load`; a run's audit.json is a few kB)


class AuditError(codec.ConfigError):
  """A bad audit configuration, or one that conflicts with the run directory (one line)."""


def _frozen(cls):
  return dataclasses.dataclass(frozen=True)(cls)


@_frozen
class Data:
  """The data audited: `dataset` (a registry name, or with `user` a `tf_forget.data.sources`
  spelling: folder:PATH, tfds:NAME[:SPLIT], tfrecord:GLOB), the tfds `data_dir`, an optional
  (H, W) resize, and the largest image of the user's data accepted."""

  dataset: str = "digits"
  data_dir: Optional[str] = None
  image_size: Optional[Tuple[int, ...]] = None
  max_image_pixels: int = fingerprint.DEFAULT_MAX_PIXELS


@_frozen
class Population:
  """The trained population (`tf_forget.train.population`): the preset (default: the data
  set's), model (the preset's), members per variant (K >= 2; the preset's), variants (`dense`,
  gradual `prune_<t>`, and one-shot or iterative names, `names.parse_trained`; the preset's),
  training steps, base seed, other preset fields (`preset_overrides`: batch_size, ...) and 003
  §6's robust training (docs/spec.md §6.8)."""

  preset: Optional[str] = None
  model: Optional[str] = None
  members: Optional[int] = None
  variants: Optional[Tuple[str, ...]] = None
  steps: Optional[int] = None
  population_seed: int = 0
  preset_overrides: Mapping[str, object] = dataclasses.field(default_factory=dict)
  robust_training: bool = False


@_frozen
class Oneshot:
  """002's one-shot pruning of the dense members (`tf_forget.prune.oneshot_schedule`): the
  variants (`oneshot_<alg>_r<r>`) and the protocol fields to replace (None: the preset's)."""

  variants: Tuple[str, ...] = ()
  phases: Optional[str] = None
  grad_batches: Optional[int] = None
  exclude_classifier: Optional[bool] = None
  ratio_over: Optional[str] = None
  up_formula: Optional[str] = None

  def overrides(self):
    """The protocol fields given, {name: value} (`oneshot_schedule.get(**overrides)`)."""
    return _given(self, exclude=("variants",))


@_frozen
class Iterative:
  """003's prune-retrain cycles (`tf_forget.prune.iterative_schedule`): the methods (wt, ft;
  every cycle of each becomes a variant `iter_<alg>_c<n>`) and the protocol fields to replace
  (`alpha`: a constant keep fraction per cycle)."""

  methods: Tuple[str, ...] = ()
  cycles: Optional[int] = None
  alpha: Optional[float] = None
  warmup_epochs: Optional[float] = None
  retrain_steps: Optional[int] = None

  def overrides(self):
    """The protocol fields given, {name: value} (`iterative_schedule.get(**overrides)`)."""
    return _given(self, exclude=("methods",))


@_frozen
class Pruning:
  """Pruning after training: one-shot (002) and iterative (003); gradual pruning during
  training is a trained variant (`Population.variants`, `prune_<t>`)."""

  oneshot: Oneshot = Oneshot()
  iterative: Iterative = Iterative()


@_frozen
class Formats:
  """Post-training formats (docs/spec.md §2.3) of the dense members and, besides float32, of the
  pruned members (docs/spec.md §1.1; () = float32 only). None: the protocol's."""

  quantizations: Optional[Tuple[str, ...]] = None
  pruned_quantizations: Optional[Tuple[str, ...]] = None


@_frozen
class Robustness:
  """Corrupted test sets: "generated" (the eval split corrupted, `tf_forget.corruptions.cache`)
  or "published" (the data set's published suites, docs/spec.md §3.6); corruption names (() none)
  and severities. None: the protocol's."""

  source: str = "generated"
  corruptions: Optional[Tuple[str, ...]] = None
  severities: Optional[Tuple[int, ...]] = None


@_frozen
class Noise:
  """l-inf uniform noise (003 §4.1, docs/spec.md §6.7): levels ε ascending (() none), draws per
  example and level, examples evaluated at most. None: the protocol's."""

  levels: Optional[Tuple[float, ...]] = None
  draws: Optional[int] = None
  examples: Optional[int] = None


@_frozen
class Deployment:
  """The bundle (`tf_forget.evaluate.deploy`) and the ship decision (`tf_forget.policy.ship_rule`).

  Attributes:
    members: "first" or "all" members' files in the bundle.
    encoding: "auto", "plain" or "sparse".
    max_sparse_latency_ratio: the sparse / plain latency bound of "auto".
    num_threads: interpreter threads.
    remeasure_latency: time the files again although a decision is recorded.
    target: where the shipped file runs (`tf_forget.evaluate.targets.TARGETS`).
    size: which size the ship rule weighs: "bytes" (the file) or "gzip" (the download).
    max_latency_ratio: the largest latency over the float reference's a recommended file may
      have (at batch 1 and at `latency_batch`).
    latency_batch: the batch timed besides batch 1.
  """

  members: str = "first"
  encoding: str = "auto"
  max_sparse_latency_ratio: float = DEFAULT_MAX_SPARSE_LATENCY_RATIO
  num_threads: int = 2
  remeasure_latency: bool = False
  target: str = "cpu"
  size: str = "bytes"
  max_latency_ratio: float = ship_rule.DEFAULT_MAX_LATENCY_RATIO
  latency_batch: int = 64


@_frozen
class Execution:
  """Where the work runs: "inline", "local" (a process pool of `workers`; None:
  every core) or "ray" (at `ray_address`; None starts a local Ray). Every executor makes the
  same bytes, so this is not part of a run's identity."""

  executor: str = "inline"
  workers: Optional[int] = None
  ray_address: Optional[str] = None


@_frozen
class Repair:
  """Repaired files `full_int8~<repair>` (`names.REPAIR_NAMES`): float<N>,
  cle, int16x8, auto; the size budget of "auto" (times the plain full int8 file); and whether
  to repair every full int8 file, not only one that forgot something significant."""

  repairs: Tuple[str, ...] = ()
  max_size: float = DEFAULT_MAX_REPAIR_SIZE
  always: bool = False


@_frozen
class UserModels:
  """The user's models and files (`tf_forget.pipeline.user_plan`).

  Attributes:
    references: K paths: `.keras` / `.h5` files, SavedModel directories or float `.tflite`
      files (all of one kind), the dense members 0..K-1.
    candidates: ((name, (K paths)), ...): the user's `.tflite` files, audited as they are.
    compress: formats tf_forget converts from the (Keras) references (`user_checks.
      COMPRESS_FORMATS`).
    labels: "none": the data has no labels (docs/spec.md §8.8); None: as the data is laid out.
    class_names: the model's output classes in order (default: the data set's / labels.txt;
      without labels the model's output indices).
    attributes: CSV of per-example attributes (`tf_forget.data.user_sets`).
    protected: attributes the subgroup audit and gates cross.
    output_index: the output to audit, for a model or file with several.
    preprocess: what the models take from the pixels (`tf_forget.data.preprocess`: unit,
      symmetric, imagenet_caffe, imagenet_torch, MODULE:FUNCTION); None: raw 0-255.
    calibration: the data that calibrates a full int8 file made here (a `sources` spelling);
      None: the audited data set's train split.
    train: the labelled data one-shot pruning reads (`tf_forget.pipeline.user_prune_plan`); None:
    none. deployment_images: the images a deployment sees, audited without labels beside the
    labelled data (`tf_forget.data.deployment_view`, docs/spec.md §8.11); None: none.
    trust_model_code: load references whose loading runs their own Python code.
    input_scaling_check: refuse a `preprocess` that looks wrong
    (`tf_forget.evaluate.input_scaling`).
  """

  references: Tuple[str, ...]
  candidates: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
  compress: Tuple[str, ...] = ()
  labels: Optional[str] = None
  class_names: Optional[Tuple[str, ...]] = None
  attributes: Optional[str] = None
  protected: Optional[Tuple[str, ...]] = None
  output_index: Optional[int] = None
  preprocess: Optional[str] = None
  calibration: Optional[str] = None
  train: Optional[str] = None
  deployment_images: Optional[str] = None
  trust_model_code: bool = False
  input_scaling_check: bool = True


@_frozen
class AuditConfig:
  """What to audit: the run directory `out` and one section per concern (see the module)."""

  out: str = ""
  data: Data = Data()
  population: Population = Population()
  pruning: Pruning = Pruning()
  formats: Formats = Formats()
  robustness: Robustness = Robustness()
  noise: Noise = Noise()
  gates: gates_lib.Gates = gates_lib.Gates()
  deployment: Deployment = Deployment()
  execution: Execution = Execution()
  repair: Repair = Repair()
  user: Optional[UserModels] = None
  human_study: Optional[human_study_options.Options] = None

  def to_json(self):
    """The configuration as a JSON dict (`from_json` reads it back exactly)."""
    return codec.to_json(self)

  @classmethod
  def from_json(cls, doc):
    """The configuration of a JSON dict (`to_json`'s); missing fields take their defaults.

    Raises:
      ConfigError: an unknown field or a value of the wrong type (one line naming it).
    """
    return codec.from_json(cls, doc)

  def validate(self):
    """The configuration's problems, each one line (() when none): `checks.problems`."""
    return tuple(f"{path} {text}" for path, text in checks.problems(self))


def _given(section, exclude=()):
  return {
    f.name: getattr(section, f.name)
    for f in dataclasses.fields(section)
    if f.name not in exclude and getattr(section, f.name) is not None
  }


def with_overrides(config, values):
  """`config` with fields replaced: {"noise.draws": 5, "data.dataset": "digits", ...}; an
  optional section (`user`, `human_study`) that is None is started empty.

  Raises:
    ConfigError: a path no configuration has, or a value of the wrong type (one line).
  """
  doc = config.to_json()
  for path, value in values.items():
    node, parts = doc, path.split(".")
    for part in parts[:-1]:
      if part in node and node[part] is None:
        node[part] = {}
      if not isinstance(node.get(part), dict):
        raise codec.ConfigError(f"unknown configuration field {path}")
      node = node[part]
    node[parts[-1]] = codec.to_json(value)
  return AuditConfig.from_json(doc)


def load(path):
  """The `AuditConfig` of a configuration file: a run's `audit.json` (the whole configuration
  it records) or a `CONFIG_SCHEMA` file (`{"schema": ..., <the sections>}`).

  Raises:
    AuditError: an unreadable file, one over `MAX_FILE_BYTES` (refused unread) or nested
      deeper than JSON's decoder follows, another schema, an audit.json written before it
      recorded the whole configuration, or a field that is unknown or of the wrong type (one
      line).
  """
  try:
    doc = fileio.read_json(path, "configuration", limit=MAX_FILE_BYTES)
  except errors.Error as e:
    raise AuditError(errors.one_line(e, 500)) from e
  schema = doc.get("schema") if isinstance(doc, dict) else None
  if schema == audit_json.SCHEMA and audit_json.CONFIG_KEY in doc:
    doc = doc[audit_json.CONFIG_KEY]
  elif schema == audit_json.SCHEMA:
    raise AuditError(
      f"{path} records no whole configuration (written by an older tf_forget): "
      "give the audit's flags instead"
    )
  elif schema == CONFIG_SCHEMA:
    doc = {k: v for k, v in doc.items() if k != "schema"}
  else:
    raise AuditError(f"{path} is neither a {CONFIG_SCHEMA} nor a {audit_json.SCHEMA} file")
  try:
    return AuditConfig.from_json(doc)
  except codec.ConfigError as e:
    raise AuditError(f"{path}: {e}", path=e.path, text=e.text) from e


def save(config, path):
  """Writes `config` as a `CONFIG_SCHEMA` file (`load` reads it back)."""
  fileio.write_json(path, {"schema": CONFIG_SCHEMA, **config.to_json()})
