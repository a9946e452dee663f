"""What an audit is asked to do: `AuditConfig` (the flags of `eval/audit.py`) and its errors.

* `AuditConfig`: what to audit; `to_json` is the config a report records.
* `AuditError`: a bad audit configuration, or one that conflicts with the run directory.
* `AUDIT_SCHEMA`: the schema of `<out>/audit.json`, what a run directory was made with
  (`eval.run_identity`).

`eval.audit_plan.plan` validates a config (defaults from the data set's protocol,
`tf_forget.data.protocols`) and `eval/audit_lib.py` runs it.
"""

import dataclasses
from typing import Mapping, Optional, Sequence, Tuple

from eval import deploy
from tf_forget.artifacts import errors
from tf_forget.data import fingerprint
from tf_forget.report import gates as gates_lib


AUDIT_SCHEMA = "tf_forget.audit/1"
DEFAULT_MAX_REPAIR_SIZE = 1.5  # --max_repair_size: times the plain full int8 file (#37)


class AuditError(errors.Error):
  """A bad audit configuration, or one that conflicts with the run directory (one line)."""


@dataclasses.dataclass(frozen=True)
class AuditConfig:
  """What to audit (see `eval/audit.py` for the flags).

  Attributes:
    dataset: data registry name.
    out: run / output directory.
    preset: training protocol (default: the data set's, `presets.for_dataset`).
    model: model registry name (default: the preset's).
    members: members per variant (default: the preset's).
    variants: trained variants (default: the preset's): `dense`, gradual `prune_<t>` and
      one-shot `oneshot_<alg>_r<r>` (002; made from dense member k by `tf_forget.prune`, so
      `dense` is added when a one-shot variant is asked for).
    oneshot_variants: one-shot variants added to `variants` (or to the preset's).
    oneshot_overrides: fields of the one-shot protocol to replace
      (`tf_forget.prune.oneshot_schedule`: phases, grad_batches, exclude_classifier, ratio_over,
      up_formula, ...).
    iterative_methods: iterative prune-retrain algorithms ("wt", "ft"; 003 Algorithm 1): every
      cycle of the iterative protocol of each is added to the variants (`iter_<alg>_c<n>`).
    iterative_overrides: options of the iterative protocol (`tf_forget.prune.
      iterative_schedule.get`: cycles, alpha, warmup_epochs, retrain_steps, exclude_classifier).
    quantizations: post-training formats of the dense members (default: the protocol's,
      SPEC §2.3; `tf_forget.data.protocols`).
    pruned_quantizations: formats of the pruned members besides float32 (default: the
      protocol's, () = float32 only, SPEC §1.1).
    corruptions: corruption names, () for none (default: the protocol's: all 19, CelebA none).
    severities: corruption severities (default: the protocol's: 1-5, digits 3).
    robustness: "generated" (corrupt the eval split, `tf_forget.corruptions.cache`) or
      "published" (the data set's published suites, `tf_forget.corruptions.published`: the
      corrupted splits of the same names read from e.g. CIFAR-10-C, plus its published test
      sets, e.g. CIFAR-10.1, ImageNet-A; SPEC §3.6). Recorded in the identity only when
      "published", so run directories made before the option keep theirs.
    noise_levels: l-inf noise levels ε, () for none (default: the protocol's, SPEC §6.7).
    noise_draws: noise draws per example and level (default: the protocol's, 100; digits 10).
    noise_examples: examples evaluated under noise, at most (default: the protocol's, 1000).
    steps: override of the preset's training steps.
    population_seed: base seed of the population.
    data_dir: tfds data directory.
    image_size: optional (H, W) input resize.
    gates: `gates_lib.Gates`.
    deploy_members: "first" or "all".
    deploy_encoding: "auto", "plain" or "sparse" (`deploy.choose_encoding`; "plain" exports
      no sparse twins).
    max_latency_ratio: the sparse / plain latency bound of "auto".
    num_threads: TFLite interpreter threads.
    preset_overrides: other preset fields to replace (e.g. batch_size; tests, small runs).
    robust_training: 003 §6 / SPEC §6.8: train (and retrain) with one of
      `robust_training.ROBUST_TRAIN_CORRUPTIONS` drawn per image at severity 3 (the preset's
      `train_corruptions`, unless `preset_overrides` names them), and, unless `corruptions` is
      given, evaluate the test distribution's `ROBUST_TEST_CORRUPTIONS` at `severities` (default
      3). Recorded in `to_json` only when True; the identity records the preset's corruptions.
    executor: "inline" (every stage in this process, one after another), "local" (a process
      pool of `workers`) or "ray" (Ray core tasks at `ray_address`; None starts a local Ray).
      Not part of the run's identity: every executor makes the same bytes (issue #15).
    workers: worker processes of "local" (default: every core), CPUs of a local Ray.
    ray_address: "auto", "ray://host:port", or None.
    remeasure_latency: time the plain / sparse twins again although `eval/encodings.json`
      records a decision for the same files and settings (issue #25). In `to_json` only when True.
    user: the user's own models and files (`eval.user_plan.UserModels`, issue #28): the audit
      imports them instead of training. In `to_json` only when given.
    repairs: the repaired files (`names.REPAIR_NAMES`: "float<N>", "cle", "int16x8", "auto"):
      for every member with a full int8 file, `full_int8~<repair>` (issue #29, #37;
      `eval.layer_analysis`, `eval.no_byte_repairs`, `eval.repair_search`); () (the default)
      none. In `to_json` only when given.
    max_repair_size: the largest file the "auto" repair may choose, in times the plain full
      int8 file's bytes (issue #37). In `to_json` only with repairs.
    repair_always: repair every full int8 file, not only one that forgot something
      significant (`layer_analysis.repair_needed`, issue #36). In `to_json` only when True.
    max_image_pixels: the largest image of the user's data accepted (width x height, issue #35;
      `tf_forget.data.fingerprint`). In `to_json` only when not the default.
  """
  dataset: str
  out: str
  preset: Optional[str] = None
  model: Optional[str] = None
  members: Optional[int] = None
  variants: Optional[Sequence[str]] = None
  oneshot_variants: Sequence[str] = ()
  oneshot_overrides: Optional[Mapping[str, object]] = None
  iterative_methods: Sequence[str] = ()
  iterative_overrides: Optional[Mapping[str, object]] = None
  quantizations: Optional[Sequence[str]] = None
  pruned_quantizations: Optional[Sequence[str]] = None
  corruptions: Optional[Sequence[str]] = None
  severities: Optional[Sequence[int]] = None
  robustness: str = "generated"
  noise_levels: Optional[Sequence[float]] = None
  noise_draws: Optional[int] = None
  noise_examples: Optional[int] = None
  steps: Optional[int] = None
  population_seed: int = 0
  data_dir: Optional[str] = None
  image_size: Optional[Sequence[int]] = None
  gates: gates_lib.Gates = gates_lib.Gates()
  deploy_members: str = "first"
  deploy_encoding: str = "auto"
  max_latency_ratio: float = deploy.DEFAULT_MAX_LATENCY_RATIO
  num_threads: int = 2
  preset_overrides: Optional[Mapping[str, object]] = None
  executor: str = "inline"
  workers: Optional[int] = None
  ray_address: Optional[str] = None
  robust_training: bool = False
  remeasure_latency: bool = False
  user: Optional[object] = None
  repairs: Tuple[str, ...] = ()
  repair_always: bool = False
  max_repair_size: float = DEFAULT_MAX_REPAIR_SIZE
  max_image_pixels: int = fingerprint.DEFAULT_MAX_PIXELS

  def to_json(self):
    d = dataclasses.asdict(self)
    if not d["repairs"]:  # the default: report.json's config as before the option
      del d["repairs"]
      del d["max_repair_size"]
    else:
      d["repairs"] = list(self.repairs)
    if self.user is None:  # the default: report.json's config as before the option
      del d["user"]
    else:
      d["user"] = self.user.to_json()
    d["gates"] = dataclasses.asdict(self.gates)
    d["preset_overrides"] = dict(self.preset_overrides or {})
    if d["robustness"] == "generated":  # the default: report.json's config as before the option
      del d["robustness"]
    if not d["robust_training"]:  # the default: report.json's config as before the option
      del d["robust_training"]
    if not d["remeasure_latency"]:  # likewise
      del d["remeasure_latency"]
    if not d["repair_always"]:  # likewise
      del d["repair_always"]
    if d["max_image_pixels"] == fingerprint.DEFAULT_MAX_PIXELS:  # likewise
      del d["max_image_pixels"]
    d["oneshot_overrides"] = dict(self.oneshot_overrides or {})
    d["iterative_overrides"] = dict(self.iterative_overrides or {})
    return d
