"""Variant names (SPEC §1.1): `dense` and `prune_<t>` are trained; TFLite formats are exported.

Trained variants:
  * `dense`: no pruning (t = 0).
  * `prune_<t>`: gradual magnitude pruning (Zhu & Gupta, tfmot `PolynomialDecay`) to fraction
    t of the prunable weights, 0 < t < 1, e.g. `prune_0.9`.
Post-training formats (`float32`, `float16`, `dynamic_int8`, `full_int8`) apply to dense members
unless combined, e.g. `prune_0.9+full_int8`; they are the TFLite exporter's business.
"""

import dataclasses
import re

DENSE = "dense"
_PRUNE = re.compile(r"^prune_(0?\.\d+)$")


class VariantError(ValueError):
  """A variant name that is not `dense` or `prune_<t>` with 0 < t < 1."""


@dataclasses.dataclass(frozen=True)
class Variant:
  """A trained variant.

  Attributes:
    name: canonical name (`dense`, `prune_0.9`).
    sparsity: target fraction t of zeros among prunable weights (0 for dense).
  """
  name: str
  sparsity: float

  @property
  def pruned(self):
    return self.sparsity > 0


def prune_name(t):
  """The canonical name of pruning to fraction `t` (`prune_0.9`, `prune_0.95`)."""
  return f"prune_{float(t):g}"


def parse(name):
  """Parses a trained-variant name.

  Args:
    name: `dense` or `prune_<t>`.

  Returns:
    A `Variant` with a canonical name.

  Raises:
    VariantError: for anything else, or t outside (0, 1).
  """
  if name == DENSE:
    return Variant(DENSE, 0.0)
  match = _PRUNE.match(name)
  if not match:
    raise VariantError(f"unknown variant {name!r}: expected 'dense' or 'prune_<t>' "
                       "with 0 < t < 1, e.g. 'prune_0.9'")
  t = float(match.group(1))
  if not 0.0 < t < 1.0:
    raise VariantError(f"sparsity of {name!r} must be in (0, 1), got {t}")
  return Variant(prune_name(t), t)


def population_variants(sparsities):
  """`dense` plus one pruned variant per sparsity, in the given order."""
  return [parse(DENSE)] + [parse(prune_name(t)) for t in sparsities]
