"""Variant names (SPEC §1.1): `dense` and `prune_<t>` are trained; TFLite formats are exported.

Trained variants:
  * `dense`: no pruning (t = 0).
  * `prune_<t>`: gradual magnitude pruning (Zhu & Gupta, tfmot `PolynomialDecay`) to fraction
    t of the prunable weights, 0 < t < 1, e.g. `prune_0.9`.
Post-training formats (`float32`, `float16`, `dynamic_int8`, `full_int8`) apply to dense members
unless combined, e.g. `prune_0.9+full_int8`; they are the TFLite exporter's business.

The grammar lives in `tf_forget.artifacts.names` (one place for every stage); re-exported here.
"""

from tf_forget.artifacts import names

DENSE = names.DENSE
VariantError = names.VariantError
Variant = names.TrainedVariant
prune_name = names.prune_name
parse = names.parse_trained
population_variants = names.population_variants
