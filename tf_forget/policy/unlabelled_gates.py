"""Gates and the verdict of an audit without labels (docs/spec.md §8.9).

Without labels nothing says which side of a flip is right; what the gates bound is how often the
file takes another decision than the reference (the user's model) on the deployment's images,
always as a flip RATE:

  * `max_flip_rate`: flips / n over every image (`stats.unlabelled.flip_rate`);
  * `max_class_flip_rate`: the largest flip rate of a class the reference predicts, left_c / n_c
    (`stats.unlabelled.per_class_shift`), over the classes with at least `MIN_CLASS_IMAGES`
    images. Not the share test: a file that swaps two classes evenly leaves both shares as they
    were, and only the classes' flip rates show it (§8.3);
  * `max_confident_flip_rate`: confident flips / n, flips where the reference's softmax
    confidence is >= `stats.unlabelled_confidence.CONFIDENT_THRESHOLD`
    (`unlabelled_confidence.confident_flips`, `rate`);
  * `max_kl`: the mean KL(reference ‖ file) (`unlabelled_confidence.kl_summary`).

A gate set on the command line decides the exit status and the manifest (`verdict`), as the
labelled gates do; a gate whose measure is undefined fails. The verdict of the report, "decides
like the reference on these images", is the same rule with a bound for every rate: the gate
when set, else its `DEFAULTS` value (`decides_like`). The gates that need labels
(`LABELLED_GATES`) are refused without labels, and the gates without labels are refused with
labels (`check`), before anything is written.
"""

import math
import numbers

from tf_forget.artifacts import errors

# The `design` of the summaries of an audit without labels (`gates.verdict` hands them here).
DESIGN = "unlabelled"
LABELLED_GATES = ("max_accuracy_drop", "max_subgroup_fnr_increase", "max_significant_classes")
UNLABELLED_GATES = ("max_class_flip_rate", "max_confident_flip_rate")
# The verdict's bounds for the rates whose gate is not set (docs/spec.md §8.9).
DEFAULTS = {"max_flip_rate": 0.01, "max_class_flip_rate": 0.05, "max_confident_flip_rate": 0.005}
# A class is gated from this many images the reference gives it (one flip moves a smaller
# class's rate by more than 10 points); smaller classes are shown, not gated.
MIN_CLASS_IMAGES = 10
RULE = (
  "a file decides like the reference on these images when its flip rate, the flip rate of every "
  f"class the reference gives at least {MIN_CLASS_IMAGES} images and its rate of confident flips "
  "are all within their bounds"
)


class GateError(errors.Error):
  """A gate the audited data cannot evaluate (one line)."""


def _finite(value):
  return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def check(gates, unlabelled):
  """Refuses gates the audited data cannot evaluate (one line).

  Args:
    gates: the `gates.Gates`.
    unlabelled: whether the audited data has no labels.

  Raises:
    GateError: a labelled gate without labels, or a gate without labels with labels.
  """
  wrong = LABELLED_GATES if unlabelled else UNLABELLED_GATES
  given = [g for g in wrong if getattr(gates, g) is not None]
  if not given:
    return
  if unlabelled:
    raise GateError(
      f"--{given[0]} needs labels, and the audited data has none (docs/spec.md §8.9): bound "
      "what the file changes with --max_flip_rate, --max_class_flip_rate, "
      "--max_confident_flip_rate or --max_kl"
    )
  raise GateError(
    f"--{given[0]} gates an audit without labels (--labels=none, docs/spec.md §8.9); with "
    "labels use --max_flip_rate, --max_significant_classes or --max_accuracy_drop"
  )


def bounds(gates, defaults=True):
  """{gate: bound} of the rule: the gates set, and with `defaults` the `DEFAULTS` of the rates
  whose gate is not (max_kl only when set)."""
  out = {}
  for gate in ("max_flip_rate", "max_class_flip_rate", "max_confident_flip_rate", "max_kl"):
    value = getattr(gates, gate)
    if value is None and defaults:
      value = DEFAULTS.get(gate)
    if value is not None:
      out[gate] = float(value)
  return out


def _pct(value):
  return f"{100 * value:.2f}%"


def _reason(gate, bound, s):
  """Why `gate` fails for summary `s`, or None."""
  value = {
    "max_flip_rate": s.get("flip_rate"),
    "max_class_flip_rate": s.get("worst_class_flip_rate"),
    "max_confident_flip_rate": s.get("confident_flip_rate"),
    "max_kl": s.get("kl_mean"),
  }[gate]
  if gate == "max_class_flip_rate" and s.get("worst_class") is None and _finite(s.get("n")):
    return None  # no class with MIN_CLASS_IMAGES images: nothing to gate
  if not _finite(value):
    return f"gate {gate} could not be evaluated: {'no saved logits' if gate != 'max_flip_rate' else 'no flips counted'}"
  if value <= bound:
    return None
  if gate == "max_flip_rate":
    return (
      f"flip rate {_pct(value)} ({s.get('flips')} of {s.get('n')} images, 95% CI "
      f"{_pct(s.get('flip_low'))} to {_pct(s.get('flip_high'))}, Clopper-Pearson; max "
      f"{_pct(bound)})"
    )
  if gate == "max_class_flip_rate":
    return (
      f"class {s.get('worst_class')}: flip rate {_pct(value)} ({s.get('worst_class_flips')} of "
      f"{s.get('worst_class_n')} images the reference gives it; max {_pct(bound)})"
    )
  if gate == "max_confident_flip_rate":
    return (
      f"confident flips {_pct(value)} ({s.get('confident_flips')} of {s.get('n')} images, "
      f"reference confidence >= {s.get('confident_threshold')}; max {_pct(bound)})"
    )
  return f"mean KL(reference ‖ file) {value:.4g} nats (max {bound:g})"


def reasons(summary, rule_bounds):
  """The one-line reasons a file's summary exceeds `rule_bounds` ({gate: bound}); [] when none."""
  out = [_reason(g, b, summary) for g, b in rule_bounds.items()]
  return [r for r in out if r is not None]


def verdict(variant, summary, gates):
  """(passed, reasons) of the gates set (`gates.verdict` of an audit without labels; the
  reference itself is never gated)."""
  if variant == "dense":
    return True, []
  found = reasons(summary, bounds(gates, defaults=False))
  return not found, found


def decides_like(summary, gates):
  """(whether the file decides like the reference on these images, reasons): the rule with
  the `DEFAULTS` where a gate is not set."""
  found = reasons(summary, bounds(gates))
  return not found, found
