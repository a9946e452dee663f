"""The audit's artifact-making stages 1-3 (members, `.tflite` files, predictions), issue #15.

Stage 1 trains the populations, then makes the one-shot members (issue #16) from the finished
dense members (`tf_forget.prune.population`); from stage 2 on they are members like any other.

`make_predictions` runs them one after another. With an executor (`tf_forget.executor`: a
local process pool or Ray), each stage's work first runs as tasks (`eval.parallel`,
`eval.tasks`); the stage's ordinary sequential pass then finds every artifact current, checks
its lineage and writes what needs the whole population (run.json, agreement tables). Without
one ("inline"), the sequential passes do the work themselves. Either way the bytes are the
same: a task is a pure function of its arguments, and TensorFlow's threads come from the
environment (`tf_forget.compat.cpu_kernels`), which the workers inherit or are given.

Robustness (corrupted splits, l-inf noise) is evaluated on the plain-encoded files of the
protocol's robustness members only (SPEC §1.5: the first 5 on ImageNet / CIFAR-10). With
`--robustness=published` the corrupted splits are read from the data set's published suite
instead of generated, and its published test sets are added (`tasks.evaluate_published`,
`tf_forget.corruptions.published`; SPEC §3.6).
"""

import os
import time

from eval import noise as noise_eval
from eval import parallel
from eval import population as eval_population
from eval import tasks
from tf_forget import executor as executor_lib
from tf_forget.artifacts import names
from tf_forget.cli import status
from tf_forget.corruptions import cache as corruption_cache
from tf_forget.corruptions import registry as corruption_registry
from tf_forget.prune import population as prune_population
from tf_forget.train import population
from tflite_export import export as export_lib


class Progress:
  """Prints members / files done out of total with an ETA, at most every 10%."""

  def __init__(self, stage, total, log):
    self.stage, self.total, self.log = stage, max(total, 1), log
    self.done, self.t0, self.next = 0, time.time(), 0.1
    status.begin(stage, total)

  def __call__(self, line):
    self.done += 1
    status.advance()
    if self.done / self.total >= self.next or self.done == self.total:
      rate = (time.time() - self.t0) / self.done
      self.log(f"  [{self.stage}] {self.done}/{self.total} "
               f"ETA {rate * (self.total - self.done):.0f} s  ({line})")
      self.next += 0.1


# Environment a Ray worker needs before it imports TensorFlow (a local pool inherits it).
WORKER_ENV = ("TF_USE_LEGACY_KERAS", "TF_ENABLE_ONEDNN_OPTS", "ONEDNN_MAX_CPU_ISA",
              "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "TF_CPP_MIN_LOG_LEVEL",
              "TF_DETERMINISTIC_OPS")


def header(log, index, name, t_start, stages=6):
  """Logs "== <index>/<stages> <name>  [<elapsed> s]" and marks the stage as under way."""
  log(f"== {index}/{stages} {name}  [{time.time() - t_start:.0f} s]")
  status.begin(name, 0)


def check_executor(config):
  """Checks, before anything is written, that the executor of `config` can be reached.

  Raises:
    executor_lib.ExecutorError: an unreachable Ray address (one line, within seconds).
  """
  if config.executor == "ray" and config.ray_address:
    executor_lib.check_address("ray", config.ray_address)


def make_executor(config, log):
  """The executor of `config` (None for "inline": the stages run in this process)."""
  if config.executor == "inline":
    return None
  env = {k: os.environ[k] for k in WORKER_ENV if k in os.environ}
  executor = executor_lib.make(config.executor, workers=config.workers,
                               address=config.ray_address, env=env)
  log(f"executor: {executor.describe()}")
  return executor


def make_predictions(config, p, executor, t_start, log):
  """Stages 1-3: members, `.tflite` files, predictions; returns the plain audited variants.

  With an executor, each stage's work runs as tasks first (`eval.parallel`); the sequential
  pass after it then finds every artifact current and writes the population-wide tables.
  """
  pop, dataset = p.population, p.dataset
  quantizations, pruned_quantizations = p.quantizations, p.pruned_quantizations
  encodings, corrupted, noise = p.encodings, list(p.corrupted), p.noise
  robust = p.robustness_members
  header(log, 1, "populations", t_start)
  if executor is not None:
    parallel.train(executor, pop, log=log)
  metas = population.train_population(pop, log=log)
  if p.oneshot:  # 002: prune each dense member after training, then fine-tune (issue #16)
    if executor is not None:
      parallel.prune(executor, pop, p.oneshot, p.oneshot_protocol, log=log)
    metas += prune_population.prune_population(pop, p.oneshot, p.oneshot_protocol, log=log)
  if p.iterative:  # 003: prune-retrain cycles from each dense member (issue #17)
    if executor is not None:
      parallel.retrain(executor, pop, p.iterative, p.iterative_protocol, log=log)
    metas += prune_population.retrain_population(pop, p.iterative, p.iterative_protocol,
                                                 log=log)
  members = [(m["variant"], int(m["k"])) for m in metas]

  header(log, 2, "TFLite export", t_start)
  dense_formats = ("float32",) + tuple(quantizations)
  pruned_formats = ("float32",) + tuple(pruned_quantizations)
  if executor is not None:
    parallel.export(executor, config.out, members, dense_formats, pruned_formats, encodings,
                    ("plain",), dataset, log=log)
  n_pruned = sum(m["variant"] != names.DENSE for m in metas)
  n_dense = sum(m["variant"] == names.DENSE for m in metas) * len(dense_formats)
  n_pruned *= len(pruned_formats)
  n_files = n_dense + n_pruned * len(encodings)
  progress = Progress("export", n_files, log)
  exported = export_lib.export_population(
      config.out, dense_formats=dense_formats, pruned_formats=pruned_formats, dataset=dataset,
      encodings=encodings, dense_encodings=("plain",), members=members,
      log=lambda line: (log(f"  {line}") if line.startswith("redo ") else progress(line)))
  all_variants = list(dict.fromkeys(r["variant"] for r in exported if not r.get("failed")))
  plain_variants = [v for v in all_variants
                    if names.parse_variant(v).encoding == names.DEFAULT_ENCODING]
  redo = lambda line: log(f"  {line}")
  robust_files = [(v, k) for v in plain_variants for k in robust]
  n_robust = len(plain_variants) * len(robust)

  header(log, 3, "TFLite evaluation", t_start)
  cache_dir = os.path.join(config.out, "corruptions")
  published = corrupted + list(p.extra_splits) if p.robustness == "published" else []
  if executor is not None:
    parallel.evaluate_all(executor, config.out, dataset, dataset.spec.eval_split, all_variants,
                          plain_variants, [] if published else corrupted, cache_dir, noise,
                          robust, config.num_threads, log=log, published=published)
  eval_population.evaluate_population(
      config.out, dataset=dataset, splits=[dataset.spec.eval_split], num_threads=config.num_threads,
      variants=all_variants, log=Progress(f"eval {dataset.spec.eval_split}", n_files, log),
      redo_log=redo)
  if published:
    tasks.evaluate_published(
        config.out, dataset, published, num_threads=config.num_threads,
        variants=plain_variants, files=robust_files, redo_log=redo,
        log=Progress("eval published", n_robust * len(published), log))
  elif corrupted:
    corruption_cache.fill(dataset, dataset.spec.eval_split,
                          [corruption_registry.parse_split_name(s) for s in corrupted],
                          cache_dir, table=corruption_cache.resolve_table(dataset))
    _, streams, split_ids = tasks.corrupted_suite(dataset, cache_dir, corrupted)
    eval_population.evaluate_population(
        config.out, dataset=dataset, split_batches=streams, num_threads=config.num_threads,
        check_keras=False, save_logits=False, variants=plain_variants, split_ids=split_ids,
        files=robust_files, log=Progress("eval corruptions", n_robust * len(corrupted), log),
        redo_log=redo)
  if noise is not None:
    noise_eval.evaluate_population(config.out, dataset, noise, variants=plain_variants,
                                   num_threads=config.num_threads, files=robust_files,
                                   log=Progress(f"l-inf noise ({len(noise.eps)} levels x "
                                                 f"{noise.draws} draws)", n_robust, log),
                                   redo_log=redo)
  return plain_variants

