"""The checks of an `AuditConfig` that need no data, no file and no run directory.

`problems(config)` returns every problem as (field path, one-line text), e.g. ("population.members",
"must be an integer >= 2, got 1"); `AuditConfig.validate` joins them, and the audit binary names its
flag instead of the path (`flag_values.flag_message`). What needs the data set's protocol, a file or
the run directory is checked by the plan (`tf_forget.pipeline.audit_plan.plan`), still before
anything is written.
"""

from tf_forget import executor as executor_lib
from tf_forget.artifacts import names

ROBUSTNESS_SOURCES = ("generated", "published")
DEPLOY_MEMBERS = ("first", "all")
DEPLOY_ENCODINGS = ("auto", "plain", "sparse")
RATIO_OVER = ("prunable", "all")
MAX_THREADS = 64


def _at_least(value, low, path, kind="an integer"):
  if value is not None and not value >= low:
    return [(path, f"must be {kind} >= {low}, got {value!r}")]
  return []


def _among(value, known, path):
  if value is not None and value not in known:
    return [(path, f"must be one of {', '.join(known)}, got {value!r}")]
  return []


def _data(data):
  out = _at_least(data.max_image_pixels, 1, "data.max_image_pixels")
  if not data.dataset:
    out.append(("data.dataset", "must name a data set"))
  if data.image_size is not None and (
    len(data.image_size) != 2 or any(v <= 0 for v in data.image_size)
  ):
    out.append(("data.image_size", "must be two positive integers H,W, e.g. 64,64"))
  return out


def _population(pop):
  return (
    _at_least(pop.members, 2, "population.members")
    + _at_least(pop.steps, 1, "population.steps")
    + _at_least(pop.population_seed, 0, "population.population_seed")
  )


def _pruning(pruning):
  one, it = pruning.oneshot, pruning.iterative
  out = (
    _at_least(one.grad_batches, 1, "pruning.oneshot.grad_batches")
    + _among(one.ratio_over, RATIO_OVER, "pruning.oneshot.ratio_over")
    + _at_least(it.cycles, 1, "pruning.iterative.cycles")
    + _at_least(it.warmup_epochs, 0, "pruning.iterative.warmup_epochs", "a number")
    + _at_least(it.retrain_steps, 1, "pruning.iterative.retrain_steps")
  )
  for method in it.methods:
    out += _among(method, names.ITERATIVE_ALGORITHMS, "pruning.iterative.methods")
  if it.alpha is not None and not 0.0 < it.alpha < 1.0:
    out.append(("pruning.iterative.alpha", f"must be in (0, 1), got {it.alpha!r}"))
  return out


def _evaluation(config):
  rob, noise = config.robustness, config.noise
  out = _among(rob.source, ROBUSTNESS_SOURCES, "robustness.source")
  if rob.severities is not None and not all(1 <= s <= 5 for s in rob.severities):
    out.append(("robustness.severities", f"must be integers 1-5, got {list(rob.severities)}"))
  levels = noise.levels or ()
  if any(e < 0 for e in levels) or any(b <= a for a, b in zip(levels, levels[1:])):
    out.append(("noise.levels", f"must be ascending numbers >= 0, got {list(levels)}"))
  return (
    out + _at_least(noise.draws, 1, "noise.draws") + _at_least(noise.examples, 1, "noise.examples")
  )


def _running(config):
  dep, ex, rep = config.deployment, config.execution, config.repair
  out = (
    _among(dep.members, DEPLOY_MEMBERS, "deployment.members")
    + _among(dep.encoding, DEPLOY_ENCODINGS, "deployment.encoding")
    + _among(ex.executor, sorted(executor_lib.EXECUTORS), "execution.executor")
    + _at_least(ex.workers, 0, "execution.workers")
    + _at_least(rep.max_size, 1.0, "repair.max_size", "a number")
  )
  out += (
    _among(dep.target, names.TARGETS, "deployment.target")
    + _among(dep.size, names.SIZE_MEASURES, "deployment.size")
    + _at_least(dep.latency_batch, 1, "deployment.latency_batch")
  )
  for field in ("max_sparse_latency_ratio", "max_latency_ratio"):
    if not getattr(dep, field) > 0:
      out.append((f"deployment.{field}", f"must be > 0, got {getattr(dep, field)!r}"))
  if not 1 <= dep.num_threads <= MAX_THREADS:
    out.append(("deployment.num_threads", f"must be in 1-{MAX_THREADS}, got {dep.num_threads}"))
  if ex.ray_address is not None and ex.executor != "ray":
    out.append(("execution.ray_address", "needs execution.executor ray"))
  for repair in rep.repairs:
    if not names.repair_ok(repair):
      out.append(
        (
          "repair.repairs",
          f"must be repairs ({names.REPAIR_NAMES}), e.g. auto or cle,float1, got {repair!r}",
        )
      )
  return out


def _trained_only(config):
  """What only an audit of the populations tf_forget trains reads, given with the user's own
  model: [(field path, why it does not apply)] (each is refused rather than ignored)."""
  pop, formats, rob, noise = (config.population, config.formats, config.robustness, config.noise)
  trained = [
    f"population.{f}"
    for f in ("preset", "model", "members", "steps")
    if getattr(pop, f) is not None
  ]
  if pop.population_seed:
    trained.append("population.population_seed")
  if pop.robust_training:
    trained.append("population.robust_training")
  if config.pruning.iterative.methods:
    trained.append("pruning.iterative.methods")
  out = [
    (
      path,
      "describes a population tf_forget trains; with your own model (--reference) "
      "that model is audited (and pruned one-shot with --pruning=oneshot)",
    )
    for path in trained
  ]
  out += [
    (
      f"formats.{f}",
      "names the formats tf_forget makes of the populations it trains; "
      "with your own model (--reference) give them with --compress",
    )
    for f in ("quantizations", "pruned_quantizations")
    if getattr(formats, f) is not None
  ]
  noise_given = [("noise.levels", noise.levels)] if noise.levels else []
  noise_given += [
    (f"noise.{f}", getattr(noise, f))
    for f in ("draws", "examples")
    if getattr(noise, f) is not None
  ]
  out += [
    (
      path,
      "belongs to l-inf noise on the normalized input of the models tf_forget "
      "trains; no noise is run on your own model (--reference), whose input has no "
      "such scale: drop it",
    )
    for path, _ in noise_given
  ]
  if rob.source != ROBUSTNESS_SOURCES[0]:
    out.append(
      (
        "robustness.source",
        f"{rob.source} reads the published suites of the data "
        "sets tf_forget trains on; with your own model "
        "(--reference) give --corruptions to corrupt your images "
        "here",
      )
    )
  if rob.severities is not None and not rob.corruptions:
    out.append(
      (
        "robustness.severities",
        "grades --corruptions, and with your own model "
        "(--reference) none is run unless --corruptions "
        "names them: give --corruptions too",
      )
    )
  return out


def _user(config):
  user, study = config.user, config.human_study
  out = []
  if user is not None:
    out += _at_least(user.output_index, 0, "user.output_index")
    if not user.references:
      out.append(("user.references", "must name at least one model"))
    out += _trained_only(config)
  if study is not None and study.export_dir is None and study.annotations is None:
    out.append(("human_study", "needs human_study.export_dir or human_study.annotations"))
  return out


def problems(config):
  """Every problem of `config` (an `AuditConfig`) as [(field path, one-line text)]."""
  return (
    _data(config.data)
    + _population(config.population)
    + _pruning(config.pruning)
    + _evaluation(config)
    + _running(config)
    + _user(config)
  )
