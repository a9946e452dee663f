"""Checks of the user's own files beyond reading them: each counted once, each giving numbers.

Steps of `tf_forget.pipeline.user_plan.STEPS` (`tf_forget.pipeline.plan_steps`), run while the
audit validates, before anything is written:

* `distinct`: the same model given twice as `--reference` (by content: a copy too), one file
  for two references in a `--candidate`, or two candidates of the same files, is refused. K
  references are K independently trained networks: the same bytes twice would be "K = 2"
  with an interval of width zero.
* `finite_outputs`: every `.tflite` file of the user's is run on the first test images, and
  one whose outputs are NaN or infinite is refused (argmax(NaN) is class 0: its "accuracy"
  would be a share of one class); the evaluation checks every example again
  (`tf_forget.evaluate.evaluate.check_finite`).
"""

from tf_forget.artifacts import hashing
from tf_forget.config import tree
from tf_forget.evaluate import batched
from tf_forget.evaluate import evaluate
from tf_forget.export import candidates as candidates_lib


def _same_content(paths):
  """The first pair (i, j), i < j, of `paths` whose files (or SavedModel directories) hold the
  same bytes, or None; a file that cannot be read is left to the steps that read it."""
  seen = {}
  for j, path in enumerate(paths):
    sha = hashing.path_sha256_or_none(path)
    if sha is None:
      continue
    if sha in seen:
      return seen[sha], j
    seen[sha] = j
  return None


def distinct(user):
  """Step: no reference, no file of a candidate and no candidate given twice (by content).

  Raises:
    AuditError: one line naming the two paths.
  """
  refs = user.references
  pair = _same_content(refs)
  if pair:
    i, j = pair
    raise tree.AuditError(
      f"--reference gives the same model twice: {refs[i]} and {refs[j]} have the same "
      "content (K references are K independently trained networks); give each once"
    )
  for name, paths in user.candidates:
    pair = _same_content(paths)
    if pair:
      i, j = pair
      raise tree.AuditError(
        f"--candidate {name} gives the same file for references {i} and {j}: {paths[i]} "
        f"and {paths[j]} have the same content; give each reference's own file"
      )
  files = {}
  for name, paths in user.candidates:
    key = tuple(hashing.path_sha256_or_none(p) for p in paths)
    if None not in key and key in files:
      raise tree.AuditError(
        f"--candidate {files[key]} and --candidate {name} are the same files (the same "
        "content): give each once"
      )
    files.setdefault(key, name)


FINITE_CHECK_IMAGES = 32  # test images every user's `.tflite` file is run on while validating


def finite_outputs(user, kind, dataset, check_data):
  """Step: every `.tflite` file of the user's (candidates, `.tflite` references) gives finite
  outputs on the first `FINITE_CHECK_IMAGES` test images (unless `check_data` is False: the
  plan alone reads no image).

  Raises:
    AuditError: "--candidate nan: nan.tflite gives NaN or infinite outputs on 32 of 32 test
      images: ..." (one line).
  """
  if not check_data:
    return
  files = [(f"--candidate {name}", path) for name, paths in user.candidates for path in paths]
  if kind != "keras":
    files = [("--reference", path) for path in user.references] + files
  if not files:
    return
  split = dataset.spec.eval_split
  images = dataset.model_inputs(
    dataset.take(split, min(FINITE_CHECK_IMAGES, dataset.num_examples(split)))
  ).images
  for flag, path in files:
    runner = batched.BatchedRunner(
      candidates_lib.read(path),
      batch_size=len(images),
      num_threads=1,
      runtime="builtin",
      output_index=user.output_index,
    )
    try:
      evaluate.check_finite(runner.run(images), f"{flag}: {path}", f"{split} images")
    except evaluate.EvaluationError as e:
      raise tree.AuditError(str(e)) from e
