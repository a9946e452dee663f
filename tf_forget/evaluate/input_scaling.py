"""Is the reference fed what it was trained on? The input scaling check.

A model trained on x / 255 and audited on raw pixels (a forgotten `--preprocess=unit`) gives a
confident, wrong audit: TensorFlow's "Post-training integer quantization" tutorial, audited without
the flag, scored its float reference 61.06% and the uint8 file (which quantizes its own input with
the scale it was calibrated at, so it half survives raw pixels) 95.90%, and the verdict shipped it.
So before anything is written — the last check of `tf_forget.pipeline.audit_lib`'s validation, since
it runs the model (not for `--plan`) — `check` runs the reference on test images under the
preprocessing given and under every other standard one (`tf_forget.data.preprocess`: raw
pixels 0-255, `unit`, `symmetric`, and for RGB images `imagenet_caffe`, `imagenet_torch`), and
decides by paired evidence (`tf_forget.evaluate.scaling_evidence`, where the rule and its
constants are justified): it refuses in one line when

  * another standard preprocessing scores at least 2 points higher on the same images with exact
    McNemar p < 0.001 (a clear gain): the line names it ("... scores 88.5% with raw pixels
    (0-255) but 95.5% with --preprocess=unit on 512 test images (paired, exact McNemar p =
    3e-11): your model probably expects --preprocess=unit; give it, or
    --input_scaling_check=off to audit as given");
  * or, none being clearly better, the given one is not significantly above chance: the line
    says so and points at `--preprocess` and the class order.

The evidence is gathered until it decides: 256 test images first, twice as many while another
preprocessing scores higher without being clearly better and a 2-point gain is still within its
interval, up to 2048 (or the whole split). A gain that stays unclear at the last look (2 points or
more but not significant, or significant but smaller) does not refuse: `check` returns a one-sentence
caveat (`caveat`), which `tf_forget.pipeline.audit_lib` prints and records in the run's
`audit.json` (`caveats`) for the report.

`--input_scaling_check=off` audits as given. Each sample: examples evenly spaced over the split's
fixed order (`Dataset.calibration_examples`: only those are decoded; all of a smaller split), each
image run once however many samples hold it (`_Scored`). A `.tflite` reference runs through the
LiteRT interpreter (`tf_forget.evaluate.batched`, the file's own input layout and quantization); a
Keras reference through the model `tf_forget.train.imported.load` gives, fed in its input layout
(`input_layout`). The check is deterministic (fixed samples, no randomness), and only the first
reference is run: K references are trained alike.

A user's quantized `.tflite` candidate (uint8 / int8 / int16 input) states the values it was
calibrated for: its input covers `[(qmin - zero_point) * scale, (qmax - zero_point) * scale]`,
and values outside are clamped. The tutorial's uint8 file covers [0, 1]; fed raw pixels it
saturates, scored 77.5% on digits where its reference scored 93% (a positively homogeneous
ReLU network barely notices the scale, so the reference alone passed the check), and the
verdict refused the file as broken. So `check` also refuses, in one line naming the file, its
range and the preprocessing that fits, when more than `CLIP_LIMIT` (10%) of the first sample's
input values fall outside a candidate's range (beyond half a quantization step) under the
preprocessing given while another standard one fits it: at most `CLIP_FIT` (1%) outside, and
its values spanning at least `MIN_USE` (a quarter) of the range (`clipped_fraction`,
`range_use`, `range_verdict`). A file calibrated on too narrow a range of the right scale
(no standard preprocessing fits it) is not refused: clamping is then what it does on a
device, and the audit measures it.

The report's side: the caveat of an unsure check is `tf_forget.report.collect.Run.caveats` (read
from `audit.json`); and (`tf_forget.report.verdict`) a compressed file that beats its reference by
clearly more than chance allows gets a caveat on the verdict's first screen saying the inputs
are probably mis-scaled.
"""

import numpy as np

from tf_forget.artifacts import fileio
from tf_forget.config import tree
from tf_forget.data import dataset_api
from tf_forget.data import input_layout
from tf_forget.data import preprocess as preprocess_lib
from tf_forget.evaluate import batched
from tf_forget.evaluate import scaling_evidence as evidence
from tf_forget.export import flatbuffer_graph
from tf_forget.train import imported

CHUNK = 256  # images fed at a time (a sample of large RGB images is not held as float32 whole)
RAW = "raw"
STANDARD = (RAW, "unit", "symmetric", "imagenet_caffe", "imagenet_torch")
RGB_ONLY = ("imagenet_caffe", "imagenet_torch")
FLAG = "--input_scaling_check=off"
CLIP_LIMIT = 0.10  # share of input values outside a candidate's range that refuses it
CLIP_FIT = 0.01  # share a preprocessing may leave outside to be named as the one that fits
MIN_USE = 0.25  # share of a candidate's range the values of a fitting preprocessing must span
QUANTIZED_RANGE = {"uint8": (0, 255), "int8": (-128, 127), "int16": (-32768, 32767)}


def spelling(name):
  """How a preprocessing is named to the user: "raw pixels (0-255)" or "--preprocess=unit"."""
  return "raw pixels (0-255)" if name == RAW else f"--preprocess={name}"


def candidates(given, channels):
  """The preprocessings to compare: `given` first, then the other standard ones that apply to
  images of `channels` channels."""
  return [given] + [n for n in STANDARD if n != given and (channels == 3 or n not in RGB_ONLY)]


def _feed(name, images):
  """`images` (uint8) as preprocessing `name` gives them (raw: the pixels themselves)."""
  if name == RAW:
    return images
  return preprocess_lib.resolve(name)(images)


def _tflite_predict(path, output_index):
  data = fileio.read_bytes(path)
  runner = batched.BatchedRunner(
    data, batch_size=64, num_threads=1, runtime="auto", output_index=output_index
  )

  def predict(inputs):
    return np.argmax(runner.run(inputs), axis=1)

  return predict


def _keras_predict(path, output_index, trust_model_code):
  model = imported.classifier(imported.load(path, trust_model_code), output_index)
  layout = input_layout.from_shape(tuple(model.inputs[0].shape))

  def predict(inputs):
    x = layout.to_model(np.asarray(inputs, np.float32))
    scores = [np.asarray(model(x[i : i + 64], training=False)) for i in range(0, len(x), 64)]
    return np.argmax(np.concatenate(scores), axis=1)

  return predict


def predictor(path, kind, output_index=None, trust_model_code=False):
  """callable(model inputs `[N, H, W, C]`) -> top-1 int `[N]` of reference `path` ("keras" or
  "tflite")."""
  if kind == "tflite":
    return _tflite_predict(path, output_index)
  return _keras_predict(path, output_index, trust_model_code)


def scores(predict, examples, names):
  """{name: top-1 int `[n]`} of `predict` on `examples` under each preprocessing of `names`, fed
  `CHUNK` images at a time.

  Raises:
    dataset_api.DataError: a preprocessing that fails on the images (the user's own function).
  """
  images = examples.images
  return {
    name: np.concatenate(
      [
        np.asarray(predict(_feed(name, images[i : i + CHUNK])))
        for i in range(0, len(images), CHUNK)
      ]
    ).astype(np.int64)
    for name in names
  }


class _Scored:
  """Top-1 per example id under each preprocessing: an image is run once, however many of the
  growing samples hold it."""

  def __init__(self, predict, names):
    self.predict, self.names, self.rows = predict, list(names), {}

  def top1(self, examples):
    """{name: top-1 int `[n]`} of `examples` (`scores` of the images not run before)."""
    ids = [int(i) for i in examples.ids]
    fresh = np.array([k for k, i in enumerate(ids) if i not in self.rows], np.int64)
    if fresh.size:
      found = scores(self.predict, examples.take(fresh), self.names)
      for j, k in enumerate(fresh):
        self.rows[ids[k]] = [int(found[name][j]) for name in self.names]
    table = np.array([self.rows[i] for i in ids], np.int64).reshape(len(ids), len(self.names))
    return {name: table[:, c] for c, name in enumerate(self.names)}


def _pct(value):
  return f"{100 * value:.1f}%"


def _p(value, digits):
  """ "p = 3e-11", or "p < 1e-300" for a p-value that underflows to 0."""
  return f"p = {value:.{digits}g}" if value > 0 else "p < 1e-300"


def _advice(given, best):
  return f"drop {spelling(given)}" if best == RAW else "give it"


def message(reference, decision, given, num_classes):
  """The one-line refusal of a refusing `scaling_evidence.Decision` ("better" or "chance")."""
  acc = decision.accuracy
  said = f"reference {reference} scores {_pct(acc[given])} with {spelling(given)}"
  if decision.kind == "better":
    best = decision.other
    return (
      f"{said} but {_pct(best.accuracy)} with {spelling(best.name)} on {decision.n} test "
      f"images (paired, exact McNemar {_p(best.p_value, 1)}): your model probably "
      f"expects {spelling(best.name)}; {_advice(given, best.name)}, or {FLAG} to audit as "
      "given"
    )
  return (
    f"{said} on {decision.n} test images, no better than chance "
    f"({100 / num_classes:.0f}%, {num_classes} classes), and no other standard "
    "preprocessing scores clearly higher: check what your model takes (--preprocess) and "
    f"the order of its classes (--class_names), or {FLAG} to audit as given"
  )


def caveat(reference, decision, given):
  """The one-sentence caveat of a "caveat" `scaling_evidence.Decision`: another preprocessing
  scores higher, not clearly enough to refuse."""
  best = decision.other
  return (
    f"The input scaling check is unsure: reference {reference} scores "
    f"{_pct(decision.accuracy[given])} with {spelling(given)}, as audited, but "
    f"{_pct(best.accuracy)} with {spelling(best.name)} on {decision.n} test images "
    f"(paired, exact McNemar {_p(best.p_value, 2)}; it refuses a gain of "
    f"{100 * evidence.MARGIN:g} points at p < {evidence.ALPHA:g}): if your model takes "
    f"{spelling(best.name)}, {_advice(given, best.name)} and audit again."
  )


def check(user, kind, dataset):
  """Refuses references fed under the wrong scaling (module docstring); writes nothing.

  Args:
    user: `tf_forget.config.tree.UserModels` (its first reference, `preprocess`, `output_index`,
      `trust_model_code`).
    kind: "keras" or "tflite".
    dataset: the audited `dataset_api.Dataset` (its eval split is sampled).

  Returns:
    None, or the caveat (one sentence, `caveat`) when another preprocessing scores higher but
    not clearly enough to refuse.

  Raises:
    tree.AuditError: the one-line refusal (`message`, `range_message`).
    dataset_api.DataError, errors.Error: the sample cannot be read or the reference run.
  """
  split = dataset.spec.eval_split
  given = user.preprocess or RAW
  names = candidates(given, dataset.spec.image_shape[-1])
  predict = predictor(user.references[0], kind, user.output_index, user.trust_model_code)
  scored, first = _Scored(predict, names), []

  def sample(size):
    examples = dataset.calibration_examples(split, size)
    if len(examples) == 0:
      raise dataset_api.DataError(f"split {split!r} of {dataset.spec.name} has no examples")
    if not first:  # the candidates' ranges are checked on the first sample
      first.append(examples)
    return examples.labels, scored.top1(examples)

  decision = evidence.settle(sample, given, dataset.spec.num_classes)
  if decision.refused:
    raise tree.AuditError(message(user.references[0], decision, given, dataset.spec.num_classes))
  _check_candidate_ranges(user, dataset, first[0], given, names)
  return caveat(user.references[0], decision, given) if decision.kind == "caveat" else None


def input_range(layout):
  """(low, high): the real values a quantized input `layout` represents, or None (float)."""
  if not layout.quantized:
    return None
  qmin, qmax = QUANTIZED_RANGE[layout.dtype]
  return ((qmin - layout.zero_point) * layout.scale, (qmax - layout.zero_point) * layout.scale)


def clipped_fraction(values, value_range, scale):
  """Share of `values` outside `value_range` by more than half a quantization step `scale`."""
  low, high = value_range
  x = np.asarray(values, np.float64)
  return float(np.mean((x < low - scale / 2) | (x > high + scale / 2))) if x.size else 0.0


def range_use(values, value_range):
  """Share of `value_range`'s width that `values` span (max - min over the range's width)."""
  x = np.asarray(values, np.float64)
  return float((x.max() - x.min()) / (value_range[1] - value_range[0])) if x.size else 0.0


def range_verdict(clipped, use, given):
  """None, or the preprocessing that fits a candidate that `given` overflows.

  Args:
    clipped: {preprocessing name: `clipped_fraction` of the sample under it}.
    use: {preprocessing name: `range_use` of the sample under it}.
    given: the preprocessing the audit was given.
  """
  if clipped[given] <= CLIP_LIMIT:
    return None
  fits = [n for n in clipped if n != given and clipped[n] <= CLIP_FIT and use[n] >= MIN_USE]
  return min(fits, key=lambda n: (clipped[n], -use[n])) if fits else None


def range_message(name, path, layout, value_range, clipped, given, best):
  """The one-line refusal of candidate `name` when preprocessing `best` fits it."""
  low, high = value_range
  return (
    f"candidate {name} {path} takes {layout.dtype} input calibrated for values in "
    f"[{low:.4g}, {high:.4g}] (scale {layout.scale:.3g}, zero point {layout.zero_point}), "
    f"but {100 * clipped[given]:.0f}% of the test images' values with {spelling(given)} "
    f"fall outside it and are clamped (with {spelling(best)}: "
    f"{100 * clipped[best]:.1f}%): it was calibrated for {spelling(best)}; give it, or "
    f"{FLAG} to audit as given"
  )


def _check_candidate_ranges(user, dataset, examples, given, names):
  """Refuses a quantized-input candidate fed values far outside its range (module docstring)."""
  fed = {n: _feed(n, examples.images) for n in names}
  for name, paths in user.candidates:
    for path in paths:
      layout = input_layout.of_io(flatbuffer_graph.io_details(fileio.read_bytes(path))["inputs"][0])
      value_range = input_range(layout)
      if value_range is None:
        continue
      clipped = {n: clipped_fraction(x, value_range, layout.scale) for n, x in fed.items()}
      use = {n: range_use(x, value_range) for n, x in fed.items()}
      best = range_verdict(clipped, use, given)
      if best is not None:
        raise tree.AuditError(range_message(name, path, layout, value_range, clipped, given, best))
