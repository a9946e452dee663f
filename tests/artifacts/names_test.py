"""names.family: the trained variant an audited variant is made from (docs/spec.md §1.1)."""

import pytest

from tf_forget.artifacts import names


@pytest.mark.parametrize(
  "variant, family",
  [
    ("dense", "dense"),
    ("float16", "dense"),
    ("full_int8", "dense"),
    ("float32+sparse", "dense"),
    ("full_int8~float3", "dense"),
    ("user_int8", "dense"),
    ("prune_0.9", "prune_0.9"),
    ("prune_0.9+full_int8", "prune_0.9"),
    ("prune_0.9+full_int8+sparse", "prune_0.9"),
    ("prune_0.90+full_int8", "prune_0.9"),  # a member variant by its canonical name
    ("oneshot_up_r10+dynamic_int8", "oneshot_up_r10"),
    ("iter_wt_c3", "iter_wt_c3"),
    ("dense (independent)", "dense (independent)"),  # outside the grammar: its own family
    ("bogus+name", "bogus+name"),
    ("custom+float16", "custom"),
  ],
)
def test_family_is_the_trained_variant(variant, family):
  assert names.family(variant) == family
