"""Checks of the user's own files and flags: steps of `tf_forget.pipeline.user_plan.STEPS`
(`tf_forget.pipeline.plan_steps`) that make no value of the plan, run while the audit
validates, before anything is written; each refuses in one line.

* `out_apart`: `--out` is not inside a data folder the audit reads.
* `image_size`: `--image_size`, if given, is the model's input size.
* `candidates`: every `--candidate` has one loadable `.tflite` file per reference
  (`read_tflite`), of the references' signature.
* `compress`: the `--compress` formats are known (`COMPRESS_FORMATS`) and made from Keras
  references; full int8 has calibration data.
* `distinct`: the same model given twice as `--reference` (by content: a copy too), one file
  for two references in a `--candidate`, or two candidates of the same files, is refused. K
  references are K independently trained networks: the same bytes twice would be "K = 2"
  with an interval of width zero.
* `finite_outputs`: every `.tflite` file of the user's is run on the first test images, and
  one whose outputs are NaN or infinite is refused (argmax(NaN) is class 0: its "accuracy"
  would be a share of one class); the evaluation checks every example again
  (`tf_forget.evaluate.evaluate.check_finite`).
"""

import os
import posixpath

from tf_forget.artifacts import hashing
from tf_forget.artifacts import names
from tf_forget.config import tree
from tf_forget.data import sources
from tf_forget.evaluate import batched
from tf_forget.evaluate import evaluate
from tf_forget.evaluate import interpreter
from tf_forget.export import candidates as candidates_lib
from tf_forget.export import export_state


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


# Formats tf_forget can make from a Keras reference (`--compress`).
COMPRESS_FORMATS = tuple(f for f in names.FORMAT_NAMES if f != names.DEFAULT_FORMAT)


def read_tflite(path):
  """The bytes of a user's `.tflite` file: a complete flatbuffer (`candidates.read`) that the
  LiteRT interpreter loads and allocates (built-in kernels, one thread)."""
  data = candidates_lib.read(path)
  try:
    interpreter.create(data, num_threads=1, runtime="builtin")
  except interpreter.TfliteError as e:
    reason = str(e).partition(": ")[2] or str(e)
    if "not a valid flatbuffer" in reason.lower():
      raise candidates_lib.CandidateError(
        f"{path} is not a complete TFLite flatbuffer (truncated or corrupt: the LiteRT "
        f"interpreter refuses it: {reason})"
      ) from e
    raise candidates_lib.CandidateError(
      f"{path} does not load in the LiteRT interpreter: {reason}"
    ) from e
  return data


def _real(path):
  """`path` with symbolic links resolved (a `scheme://` URL normalized only)."""
  if "://" in str(path):
    scheme, _, rest = str(path).partition("://")
    return f"{scheme}://{posixpath.normpath(rest)}"
  return os.path.realpath(path)


def out_apart(out, data, user):
  """Step: refuses an --out in a data folder the audit reads (`folder:PATH` of --dataset,
  --calibration or --train): the audit would write into the user's data, and a re-run would
  read its own files (the gallery's images, the bundle) as examples.

  Raises:
    AuditError: "--out ... is inside the data folder ... (--dataset): ..." (one line).
  """
  real_out = _real(out)
  for flag, spelling in (
    ("--dataset", data.dataset),
    ("--calibration", user.calibration),
    ("--train", user.train),
    ("--deployment_images", user.deployment_images),
  ):
    name, options = sources.parse(spelling) if spelling else (None, {})
    if name != "folder":
      continue
    folder = _real(options["path"])
    if real_out == folder or real_out.startswith(folder.rstrip("/") + "/"):
      raise tree.AuditError(
        f"--out {out} is inside the data folder {options['path']} ({flag}): the "
        "audit would write into your data and read its own files as examples; give an "
        "--out outside it"
      )


def image_size(data, user, signature):
  """Step: `--image_size` with your model: the model's input size decides (the images are resized to
  it, `user_plan._dataset`); the same size is accepted, another refused rather than ignored.

  Raises:
    AuditError: "--image_size 16x16 is not the model's input size 8x8: ..." (one line).
  """
  if not data.image_size:
    return
  (height, width, _), _ = signature
  given = tuple(int(v) for v in data.image_size)
  if given != (height, width):
    raise tree.AuditError(
      f"--image_size {given[0]}x{given[1]} is not the model's input size {height}x{width}: "
      f"the images are resized to what {user.references[0]} takes; drop --image_size"
    )


def candidates(user, signature):
  """Step: every candidate has one file per reference, readable and of the references' signature."""
  seen = set()
  for name, paths in user.candidates:
    if name in seen:
      raise tree.AuditError(f"--candidate {name} given twice")
    seen.add(name)
    if len(paths) != len(user.references):
      raise tree.AuditError(
        f"--candidate {name} has {len(paths)} files for {len(user.references)} references: "
        "give one file per reference, in the same order"
      )
    for path in paths:
      candidates_lib.check_signature(
        path, candidates_lib.signature(read_tflite(path), path, user.output_index), signature
      )


def compress(user, kind, dataset, check_data):
  """Step: the formats of `--compress` are known and made from Keras references; full int8 has
  calibration data, readable unless `check_data` is False."""
  for fmt in user.compress:
    if fmt not in COMPRESS_FORMATS:
      raise tree.AuditError(
        f"--compress: unknown format {fmt!r} (known: {', '.join(COMPRESS_FORMATS)})"
      )
  if user.compress and kind != "keras":
    raise tree.AuditError(
      "--compress converts the reference model: it needs Keras references (.keras, .h5, "
      "SavedModel), not .tflite files"
    )
  if "full_int8" in user.compress:
    source, split = export_state.calibration_source(dataset)
    if source is dataset and "train" not in dataset.spec.splits:
      raise tree.AuditError(
        "--compress=full_int8 calibrates on 100 train examples (docs/spec.md §2.3): give "
        "--calibration=DATA, or a data set with a train split (a folder with train/ and test/)"
      )
    if check_data:
      source.take(split, 1)
