"""The audit's evaluation units of work, as executor tasks: predictions of `.tflite` files on the
clean, corrupted and published splits, the Keras references' own predictions, the corrupted
splits' generation and the l-inf noise evaluation (`tf_forget.pipeline.file_stages`,
`tf_forget.pipeline.repair_stages`).

Each is a task as `tf_forget.pipeline.tasks` defines one: a pure function of plain JSON
keyword arguments and of the artifacts on disk, writing its artifacts atomically and returning
a small JSON dict.
"""

from tf_forget.artifacts import layout
from tf_forget.artifacts import noise_artifact
from tf_forget.artifacts import predictions
from tf_forget.corruptions import cache as corruption_cache
from tf_forget.corruptions import corrupted_split
from tf_forget.corruptions import corruption_registry
from tf_forget.corruptions import published_suites
from tf_forget.evaluate import batched
from tf_forget.evaluate import noise_eval
from tf_forget.evaluate import population_eval
from tf_forget.pipeline import tasks


def corrupted_suite(dataset, cache_dir, splits):
  """The `corrupted_split.CorruptedDataset`, stream callables and split identities of cached corrupted splits.

  Shared by the driver and the tasks so that both evaluate exactly the same streams.

  Returns:
    (suite, {split: callable(batch_size)}, {split: identity}).
  """
  suite = corrupted_split.CorruptedDataset(dataset, cache_dir, splits)
  streams = {s: (lambda b, s=s: suite.batches(s, b)) for s in splits}
  ids = {s: suite.corrupted_split(s).identity() for s in splits}
  return suite, streams, ids


def published_suite(dataset, splits):
  """The `PublishedSuite`, stream callables and split identities of published splits.

  `--robustness=published` (`tf_forget.corruptions.published_suites`): shared by the driver and the
  tasks as `corrupted_suite` is. A split's identity is its tfds builder's full name and version
  with the loader options, so predictions made from another suite version are redone.

  Returns:
    (suite, {split: callable(batch_size)}, {split: identity}).
  """
  suite = published_suites.PublishedSuite(dataset, splits)
  streams = {s: (lambda b, s=s: suite.batches(s, b)) for s in splits}
  return suite, streams, {s: suite.identity(s) for s in splits}


def evaluate_published(run_dir, data, splits, **options):
  """Evaluates `.tflite` files on published splits
  (`tf_forget.evaluate.population_eval.evaluate_population`).

  The corrupted splits are evaluated without logits, as the generated ones; the published test
  sets (`cifar10_1`, `imagenet_a`) with logits, which ImageNet-A's optional 200-class mask
  (docs/spec.md §3.6) needs in the report.

  Args:
    data: the audited `dataset_api.Dataset`.
    splits: published split names.
    **options: `evaluate_population` keyword arguments (num_threads, files, variants, log,
      redo_log, write_tables).
  """
  suite, streams, ids = published_suite(data, list(splits))
  for with_logits in (False, True):
    group = [s for s in splits if suite.keeps_logits(s) == with_logits]
    if group:
      population_eval.evaluate_population(
        run_dir,
        dataset=data,
        split_batches={s: streams[s] for s in group},
        split_ids=ids,
        check_keras=False,
        save_logits=with_logits,
        **options,
      )


def corrupt_splits(dataset, dataset_options, splits, cache_dir):
  """Generates the cached corrupted versions of the eval split (`corruption_cache.fill`).

  Returns:
    {"generated": [split names made], "splits": splits}.
  """
  data = tasks.dataset_of(dataset, dataset_options)
  suite = corrupted_split.CorruptedDataset(data, cache_dir, splits)
  keys = corruption_cache.fill(
    data,
    suite.source_split,
    [corruption_registry.parse_split_name(s) for s in splits],
    cache_dir,
    table=suite.table,
  )
  return {
    "generated": [corruption_registry.split_name(k.corruption, k.severity) for k in keys],
    "splits": list(splits),
  }


def evaluate_files(
  run_dir,
  files,
  dataset,
  dataset_options,
  num_threads,
  splits=(),
  corrupted=(),
  cache_dir=None,
  published=(),
):
  """Evaluates some `.tflite` files on clean, cached corrupted and / or published splits.

  Writes predictions files only (the stage's `finish` writes the agreement tables); clean
  splits keep logits, corrupted splits do not (`tf_forget.pipeline.file_stages`).

  Args:
    files: [(variant, k)].
    splits: registry split names (e.g. ["test"]).
    corrupted: corrupted split names (`glass_blur@3`), read from `cache_dir`.
    published: published split names (`--robustness=published`; `evaluate_published`).

  Returns:
    {"files": number of files, "splits": number of splits}.
  """
  data = tasks.dataset_of(dataset, dataset_options)
  files = [(v, int(k)) for v, k in files]
  if splits:
    population_eval.evaluate_population(
      run_dir,
      dataset=data,
      splits=list(splits),
      num_threads=num_threads,
      check_keras=False,
      files=files,
      write_tables=False,
    )
  if corrupted:
    _, streams, ids = corrupted_suite(data, cache_dir, list(corrupted))
    population_eval.evaluate_population(
      run_dir,
      dataset=data,
      split_batches=streams,
      split_ids=ids,
      num_threads=num_threads,
      check_keras=False,
      save_logits=False,
      files=files,
      write_tables=False,
    )
  if published:
    evaluate_published(
      run_dir, data, list(published), num_threads=num_threads, files=files, write_tables=False
    )
  return {"files": len(files), "splits": len(splits) + len(corrupted) + len(published)}


def keras_predictions(run_dir, member_variant, k, dataset, dataset_options, split):
  """The Keras model's own predictions of one member on a clean split (agreement reference).

  Returns:
    {"path": the predictions file}.
  """
  data = tasks.dataset_of(dataset, dataset_options)
  split_id = predictions.split_identity(data.spec.name, data.spec.options, split)
  try:
    out = population_eval.keras_predictions(
      run_dir,
      member_variant,
      int(k),
      split,
      lambda: (data.model_inputs(e) for e in data.batches(split, batched.DEFAULT_BATCH_SIZE)),
      split_id=split_id,
    )
  finally:
    tasks.clear_keras()
  return {"path": out}


def evaluate_noise(run_dir, files, dataset, dataset_options, protocol, num_threads):
  """Evaluates some plain `.tflite` files under l-inf noise (`tf_forget.evaluate.noise_eval`,
  docs/spec.md §6.7).

  Args:
    protocol: `NoiseProtocol.to_json()`.

  Returns:
    {"files": [noise artifact paths]}.
  """
  data = tasks.dataset_of(dataset, dataset_options)
  noise = noise_artifact.NoiseProtocol(
    eps=tuple(protocol["eps"]),
    draws=protocol["draws"],
    examples=protocol["examples"],
    seed=protocol["seed"],
  )
  files = [(v, int(k)) for v, k in files]
  noise_eval.evaluate_population(run_dir, data, noise, num_threads=num_threads, files=files)
  return {"files": [layout.noise(run_dir, v, k) for v, k in files]}
