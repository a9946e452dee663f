"""Median inference latency of `.tflite` files, run as on a device.

Per format and encoding, the deployment table reports the median batch-1 and batch-64 latency with 2
threads, measured in the same run as the plain twin. `measure` times several files in one
run, interleaved in rounds: for every batch size, each round takes every file in turn — a
fresh interpreter, warmed, invoked `block` times (after one untimed invoke), released — the first
file rotating from round to round. Blocks rather than single invokes: alternating invokes
of an XNNPACK and a built-in-kernel interpreter one by one lets their thread pools disturb each
other, a block re-warms the pool first.

Fresh interpreters per round: on a loaded machine (2 shared cores) an
interpreter's thread pool settles into a fast or a slow state for its whole life — measured:
the digits CNN's batch-1 median at 33 µs or 61 µs, every round of one interpreter alike, so one
interpreter per file made a sparse twin "1.9x slower" in one run and 0.5x in the next. A fresh
pair each round turns that state into round-to-round spread, which `paired_ratios` (the ratio
of the two block medians of the same round, same load) and `ratio_interval` (their median and
interquartile range) expose instead of hiding it in one number.

Within a round one interpreter lives at a time (`_round`): created, warmed, timed, released —
with several alive, the idle thread pools of the others spin on the cores the timed one needs
(seen: a float file six times faster than a 16x8 file timed at 0.25-0.5x of it, beside six
idle interpreters). Only `invoke` is
timed (the input is set before); the inputs are fixed pseudo-random pixels
(the sparse kernels' work does not depend on the data). The first `warmup` invocations of each
interpreter are not timed (XNNPACK packs weights at the first invoke). The runtime path is
chosen in the first round (`interpreter.create_for_device`: XNNPACK, else the built-in kernels)
and kept for the later ones; it is returned with the numbers.

Rounds stop early once the ratios are known (`measure`'s `reference` and `precision`): after
`min_rounds`, as soon as every file's per-round ratio to the reference (`paired_ratios`) has an
interquartile range no wider than `precision` of its median (`settled`). On a quiet machine
that is after the minimum; under load, the spread keeps the rounds going up to `repeats`.
"""

import time

import numpy as np

from tf_forget.artifacts import errors
from tf_forget.evaluate import interpreter

DEFAULT_BATCH_SIZES = (1, 64)
DEFAULT_BLOCK = 5
DEFAULT_REPEATS = 15 * DEFAULT_BLOCK  # 15 rounds
DEFAULT_WARMUP = 3
# `ratio_interval`'s central share of the per-round ratios: 0.5 is the interquartile range.
DEFAULT_COVERAGE = 0.5
# Early stop (`settled`): at least this many rounds, and ratio intervals this narrow.
DEFAULT_MIN_ROUNDS = 5
DEFAULT_PRECISION = 0.1


class LatencyError(errors.Error):
  """Bad latency-measurement options (one line)."""


class _FixedBatch:
  """A file whose input cannot be resized (its `InputLayout.batch`): a batch of b
  examples is ceil(b / its batch) invokes, as a device runs it."""

  def __init__(self, interp, invokes):
    self._interp, self._invokes = interp, invokes

  def invoke(self):
    for _ in range(self._invokes):
      self._interp.invoke()


def _prepare(model, batch_size, num_threads, runtime, seed):
  """(interpreter, runtime, fallback reason) with a fixed input set at `batch_size` (a file
  with a fixed batch: at its own, invoked as often as `batch_size` needs, `_FixedBatch`)."""
  fixed = interpreter.input_layout_of(model).batch
  size = batch_size if fixed is None else None
  if runtime == "auto":
    interp, used, reason = interpreter.create_for_device(model, num_threads, size)
  else:
    interp = interpreter.create(model, num_threads, runtime, size)
    used, reason = runtime, None
  details = interp.get_input_details()[0]
  images = np.random.default_rng(seed).integers(0, 256, size=details["shape"], dtype=np.uint8)
  interp.set_tensor(details["index"], interpreter.InputQuantizer(details)(images))
  if fixed is not None:
    return _FixedBatch(interp, -(-batch_size // fixed)), used, reason
  return interp, used, reason


def _check_options(models, batch_sizes, repeats, warmup, block, reference, precision, min_rounds):
  if not models:
    raise LatencyError("no file to time")
  if reference is not None and reference not in models:
    raise LatencyError(f"reference {reference!r} is not one of the files to time")
  if precision is not None and not (isinstance(precision, (int, float)) and precision > 0):
    raise LatencyError(f"precision must be a number > 0, got {precision!r}")
  if not isinstance(min_rounds, int) or min_rounds < 1:
    raise LatencyError(f"min_rounds must be an int >= 1, got {min_rounds!r}")
  if not isinstance(repeats, int) or repeats < 1:
    raise LatencyError(f"repeats must be an int >= 1, got {repeats!r}")
  if not isinstance(warmup, int) or warmup < 0:
    raise LatencyError(f"warmup must be an int >= 0, got {warmup!r}")
  if not isinstance(block, int) or block < 1:
    raise LatencyError(f"block must be an int >= 1, got {block!r}")
  if not batch_sizes or any(not isinstance(b, int) or b < 1 for b in batch_sizes):
    raise LatencyError(f"batch sizes must be ints >= 1, got {batch_sizes!r}")


def _time_block(interp, n):
  interp.invoke()  # untimed: re-warms this interpreter's thread pool
  times = []
  for _ in range(n):
    start = time.perf_counter()
    interp.invoke()
    times.append(time.perf_counter() - start)
  return times


def _round(data, order, n, batch_size, num_threads, runtimes, fallbacks, warmup, seed):
  """{name: n invoke times} of one round, each file on a fresh interpreter of its own, created,
  warmed and timed in turn and released before the next: only the timed file's thread pool is
  alive (idle XNNPACK pools of other interpreters spin and steal the timed one's cores).

  `runtimes` maps a name to the runtime to create it with; "auto" is replaced by the path
  taken (its fallback reason put in `fallbacks`), so later rounds skip the probe.
  """
  out = {}
  for name in order:
    interp, used, reason = _prepare(data[name], batch_size, num_threads, runtimes[name], seed)
    if runtimes[name] == "auto":
      runtimes[name], fallbacks[name] = used, reason
    for _ in range(warmup):
      interp.invoke()
    out[name] = _time_block(interp, n)
    del interp
  return out


def _stats(times, round_medians):
  t = np.asarray(times)
  return {
    "median_s": float(np.median(t)),
    "p10_s": float(np.percentile(t, 10)),
    "p90_s": float(np.percentile(t, 90)),
    "repeats": int(t.size),
    "round_medians_s": [float(m) for m in round_medians],
  }


def measure(
  models,
  batch_sizes=DEFAULT_BATCH_SIZES,
  num_threads=interpreter.DEFAULT_NUM_THREADS,
  repeats=DEFAULT_REPEATS,
  warmup=DEFAULT_WARMUP,
  runtime="auto",
  seed=0,
  block=DEFAULT_BLOCK,
  reference=None,
  precision=None,
  min_rounds=DEFAULT_MIN_ROUNDS,
):
  """Latency of several files, measured interleaved in rounds of fresh interpreters.

  Args:
    models: {name: path or bytes of a `.tflite` file} (e.g. a plain file and its sparse twin).
    batch_sizes: input batch sizes to time.
    num_threads: interpreter threads.
    repeats: timed invocations per file and batch size (>= 1), in ceil(repeats / block) rounds.
    warmup: untimed invocations of each fresh interpreter (>= 0).
    runtime: "auto" (as on a device), "xnnpack" or "builtin".
    seed: seed of the input pixels.
    block: timed invocations of one file in a row within a round (>= 1).
    reference: the name of the file the others are compared with; with `precision`, the
      rounds of a batch size stop once every other file's ratio to it is `settled` (after
      `min_rounds`), else they run to `repeats`.
    precision: the widest interquartile range of the per-round ratios, relative to their median,
      at which the rounds may stop (None: never early).
    min_rounds: rounds before an early stop.

  Returns:
    {name: {"runtime": path timed, "fallback_reason": str or None,
            "batch_<b>": {"median_s", "p10_s", "p90_s", "repeats", "round_medians_s": [one
            block median per round]}}}.

  Raises:
    LatencyError: bad options.
    interpreter.TfliteError: a file that cannot be read or run.
  """
  _check_options(models, batch_sizes, repeats, warmup, block, reference, precision, min_rounds)
  data = {
    name: interpreter.read_model(m) if isinstance(m, str) else m for name, m in models.items()
  }
  names = list(models)
  results = {name: {} for name in names}
  for b in batch_sizes:
    runtimes, fallbacks = {name: runtime for name in names}, {}
    times = {name: [] for name in names}
    medians = {name: [] for name in names}
    for r in range(-(-repeats // block)):
      order = names[r % len(names) :] + names[: r % len(names)]
      timed = _round(
        data,
        order,
        min(block, repeats - r * block),
        b,
        num_threads,
        runtimes,
        fallbacks,
        warmup,
        seed,
      )
      for name, t in timed.items():
        times[name] += t
        medians[name].append(np.median(t))
      if reference is not None and precision is not None and r + 1 >= min_rounds:
        base = np.asarray(medians[reference])
        if all(
          settled(np.asarray(medians[name]) / base, precision)
          for name in names
          if name != reference
        ):
          break
    for name in names:
      results[name].setdefault("runtime", runtimes[name])
      results[name].setdefault("fallback_reason", fallbacks.get(name))
      results[name][f"batch_{b}"] = _stats(times[name], medians[name])
  return results


def ratio(result, reference, batch_size):
  """Median latency ratio `result / reference` at `batch_size` (e.g. sparse vs plain)."""
  key = f"batch_{batch_size}"
  return result[key]["median_s"] / reference[key]["median_s"]


def paired_ratios(result, reference, batch_size):
  """Per-round ratios `result / reference` of the block medians at `batch_size`.

  Both files ran in each round on fresh interpreters under the same machine load, so the
  ratio of a round cancels the load the two shared; their spread is what remains.

  Returns:
    float array [rounds].
  """
  key = f"batch_{batch_size}"
  return np.asarray(result[key]["round_medians_s"], float) / np.asarray(
    reference[key]["round_medians_s"], float
  )


def settled(ratios, precision=DEFAULT_PRECISION, coverage=DEFAULT_COVERAGE):
  """Whether per-round ratios are known to `precision`: (high - low) / median <= precision.

  high and low bound the central `coverage` share of the ratios (`ratio_interval`: the
  interquartile range by default).
  """
  interval = ratio_interval(ratios, coverage)
  return interval["high"] - interval["low"] <= precision * interval["median"]


def ratio_interval(ratios, coverage=DEFAULT_COVERAGE):
  """Median of paired latency ratios and the central `coverage` share of them.

  Args:
    ratios: per-round ratios (`paired_ratios`), >= 1 value.
    coverage: in (0, 1]; the default 0.5 gives the interquartile range.

  Returns:
    {"median", "low", "high" (the (1 - coverage) / 2 and (1 + coverage) / 2 percentiles,
    linear interpolation), "rounds", "coverage"}.

  Raises:
    LatencyError: no ratio, a ratio that is not a finite number > 0, or a bad coverage.
  """
  r = np.asarray(ratios, float)
  if r.size == 0 or not np.all(np.isfinite(r) & (r > 0)):
    raise LatencyError(f"latency ratios must be finite numbers > 0, got {list(r)!r}")
  if not 0 < coverage <= 1:
    raise LatencyError(f"coverage must be in (0, 1], got {coverage!r}")
  low, median, high = np.percentile(r, [50 * (1 - coverage), 50, 50 * (1 + coverage)])
  return {
    "median": float(median),
    "low": float(low),
    "high": float(high),
    "rounds": int(r.size),
    "coverage": float(coverage),
  }
