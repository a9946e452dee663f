"""One-shot pruning of the user's own Keras model: the plan's part.

    audit --dataset=folder:/data/test --reference=model.keras --train=folder:/data/train \
          --pruning=oneshot --algorithms=mp,gp --ratios=2,4

The one-shot flags of a trained audit (`--ratios`, `--algorithms`, `--finetune`, `--grad_batches`,
`--exclude_classifier`, `--ratio_over`, `--up_formula`; in the config `oneshot_variants` and
`oneshot_overrides`) make `oneshot_<alg>_r<r>` member k of each imported dense member k, with the
stages and code of a trained population (`tf_forget.pipeline.member_stages. oneshot_stages`,
`tf_forget.prune`: g once per parent, prune, fine-tune; docs/spec.md §6): `plan` (a plan step,
`tf_forget.pipeline.plan_steps`) makes the variants, the "user" one-shot schedule
(`tf_forget.prune.oneshot_schedule`, with the overrides) and the imported members' preset
(`tf_forget.train.imported_parent.preset`), which `tf_forget.pipeline.user_plan` puts into the
`Plan` and its `ImportedPopulation`. Export, evaluation, report (paired with their
parent), verdict, gates and bundle then treat them as any one-shot member.

The train data: `--train=DATA`, spelled like `--dataset` (`folder:PATH`, `tfds:NAME[:SPLIT]`,
`tfrecord:GLOB`), is recorded in the audited data set's options as `train_data`
(`train_option`) and read by the pruning code through `tf_forget.data.train_view` (its train
split if it has one, else its only split; at the reference's input size, channels, classes and
`--preprocess`); why there, and what of it the lineage detects: that module's docstring.

Refused in one line before anything is written: one-shot variants of `.tflite` references (no
weights to fine-tune), without `--train`, or of a reference that is not compiled with a sparse
categorical cross-entropy of logits (`imported_parent.trainable`); `--train` without one-shot
variants; UP over references whose weight decays differ (one ε, docs/spec.md §6.1); train data with
fewer examples than a fine-tuning (or g's) batch after the validation hold-out.
"""

from tf_forget.artifacts import names
from tf_forget.config import tree
from tf_forget.data import sources
from tf_forget.data import train_view
from tf_forget.prune import gradient as prune_gradient
from tf_forget.prune import oneshot_schedule
from tf_forget.prune import pruned_population
from tf_forget.train import imported
from tf_forget.train import imported_parent


def variants(population, oneshot_config):
  """The one-shot variants asked for: a `tree.Oneshot`'s, or one-shot names among a
  `tree.Population`'s `variants`.

  Raises:
    AuditError: a variant that is not one-shot besides dense, or one-shot options without a
      one-shot variant.
  """
  trained, oneshot, iterative = pruned_population.split_variants(
    list(population.variants or ()) + list(oneshot_config.variants)
  )
  other = [v for v in trained + iterative if v != names.DENSE]
  if other:
    raise tree.AuditError(
      f"{', '.join(other)} describe a population tf_forget "
      "trains; your model can be pruned one-shot (--pruning=oneshot)"
    )
  if oneshot_config.overrides() and not oneshot:
    raise tree.AuditError(
      "one-shot options given but no one-shot variant asked for (--pruning=oneshot)"
    )
  return tuple(dict.fromkeys(oneshot))


def train_option(data, user, kind, oneshot_asked):
  """Plan step: {"train": the {"name", "options"} of `--train` (`sources.parse`) for the data
  set's `train_data`, or None}; `data`: the `tree.Data` section (tfds' `data_dir`), `user`: the
  `tree.UserModels`, `kind`: the references' kind, `oneshot_asked`: `variants(...)`.

  Raises:
    AuditError: one-shot variants of `.tflite`, Keras 3 or SavedModel references (tfmot
      prunes tf_keras models only) or without `--train`; `--train`
      without one-shot variants, or not a spelling of the user's own data.
  """
  oneshot, data_dir = oneshot_asked, data.data_dir
  if oneshot and kind != "keras":
    raise tree.AuditError(
      "--pruning=oneshot prunes and fine-tunes your model's weights: it needs Keras "
      "references (.keras, .h5, SavedModel), not .tflite files"
    )
  for path in user.references if oneshot else ():
    found = imported.model_kind(path)
    if found != "tf_keras":  # Keras 3 files and SavedModels
      raise tree.AuditError(
        f"--pruning=oneshot uses tfmot, which needs a tf_keras model; {path} is "
        f"{'a Keras 3 file' if found == 'keras3' else 'a SavedModel without Keras metadata'}: "
        "build the same model with tf_keras (import tf_keras), set its weights and save it, "
        "or audit this file without --pruning"
      )
  if oneshot and not user.train:
    raise tree.AuditError(
      "one-shot pruning fine-tunes your model: give --train=DATA "
      f"(labelled images: {sources.OWN_FORMS})"
    )
  if not user.train:
    return {"train": None}
  if not oneshot:
    raise tree.AuditError(
      "--train is the data one-shot pruning fine-tunes on: give "
      "--pruning=oneshot, or leave --train out"
    )
  name, options = sources.parse_own("train", user.train, data_dir)
  return {"train": {"name": name, "options": options}}


def _weight_decay(user, oneshot):
  """λ of the imported members' preset: ε / 2 of the references' one weight decay, else 0.

  Raises:
    imported.ReferenceModelError: a reference one-shot pruning cannot fine-tune.
    AuditError: UP asked for while the references' weight decays differ.
  """
  decays = set()
  for path in user.references:
    decays |= imported_parent.trainable(path, user.output_index, user.trust_model_code)
  ups = [v for v in oneshot if names.parse_trained(v).algorithm == "up"]
  if len(decays) > 1 and ups:
    raise tree.AuditError(
      f"{ups[0]} scores with one weight decay ε (docs/spec.md §6.1), but your reference"
      f"{'s were' if len(user.references) > 1 else ' was'} trained with several: "
      f"{', '.join(f'{e:g}' for e in sorted(decays))}; leave out up (--algorithms)"
    )
  return decays.pop() / 2 if len(decays) == 1 else 0.0


def _check_examples(user, view, schedule, oneshot):
  """Raises AuditError unless the train data has a fine-tuning batch (and g's batches) after
  the validation hold-out."""
  n = view.num_examples(train_view.TRAIN)
  kept = n - -(-n // schedule.validation_every)
  need, what = schedule.batch_size, f"a fine-tuning batch of {schedule.batch_size}"
  if any(prune_gradient.needs(names.parse_trained(v).algorithm) for v in oneshot):
    grad = schedule.grad_batches * schedule.grad_batch_size
    if grad > need:
      need, what = (
        grad,
        (f"g's {schedule.grad_batches} batch(es) of {schedule.grad_batch_size} (--grad_batches)"),
      )
  if kept < need:
    raise tree.AuditError(
      f"--train={user.train} has {n} examples in split {view.split!r}, {kept} after the "
      f"validation hold-out (every {schedule.validation_every}th): fewer than {what}"
    )


def plan(pruning, user, dataset, oneshot_asked, check_data):
  """Plan step: the one-shot variants, their schedule and the imported members' preset; checks
  everything, writes nothing.

  Args:
    pruning: the `tree.Pruning` section (its `oneshot`: the protocol's fields to replace).
    user: the `tree.UserModels`.
    dataset: the audited data set, with the `train_data` option (`train_option`).
    oneshot_asked: `variants(...)`.
    check_data: decode the first train image (False: `--plan`, the files listed only).

  Returns:
    {"oneshot": the variant names (`oneshot_<alg>_r<r>`), "oneshot_schedule": their
    `oneshot_schedule.OneshotSchedule` ("user", with the overrides), "preset": the imported
    members' `presets.Preset` (`imported_parent.preset`, λ of the references)}; (), None, None
    without one-shot variants.

  Raises:
    AuditError, OneshotScheduleError, imported.ReferenceModelError, DataError: one line.
  """
  oneshot = oneshot_asked
  if not oneshot:
    return {"oneshot": (), "oneshot_schedule": None, "preset": None}
  schedule = oneshot_schedule.get(imported_parent.PRESET, **pruning.oneshot.overrides())
  view = train_view.of(dataset)
  if check_data:  # `--plan` decodes no image
    view.take(train_view.TRAIN, 1)  # readable: decodes the first image
  _check_examples(user, view, schedule, oneshot)
  return {
    "oneshot": oneshot,
    "oneshot_schedule": schedule,
    "preset": imported_parent.preset(_weight_decay(user, oneshot)),
  }


def describe(p):
  """The cost plan's line of the one-shot members of `p` (an `audit_plan.Plan`), or ""."""
  if not p.oneshot:
    return ""
  members = p.population.members
  return (
    f"\n  one-shot: {len(p.oneshot)} variant{'' if len(p.oneshot) == 1 else 's'} x "
    f"{members} reference{'' if members == 1 else 's'} = {len(p.oneshot) * members} "
    f"members, fine-tuned {p.oneshot_schedule.epochs} epochs on --train={p.user.train}"
  )
