"""palette: one style per variant, by family.

Hues and lightness are checked in HLS (colorsys), independently of how palette builds them.
"""

import colorsys

import pytest

from tf_forget.report import palette

# 30 audited variants of the name grammar (tf_forget/artifacts/names.py): every method, every
# format and both encodings.
THIRTY = [
  "dense",
  "float16",
  "dynamic_int8",
  "full_int8",
  "float32+sparse",
  "prune_0.5",
  "prune_0.5+float16",
  "prune_0.7",
  "prune_0.8",
  "prune_0.9",
  "prune_0.9+full_int8",
  "prune_0.9+sparse",
  "prune_0.9+full_int8+sparse",
  "prune_0.95",
  "oneshot_mp_r2",
  "oneshot_mp_r4",
  "oneshot_mp_r10",
  "oneshot_up_r2",
  "oneshot_up_r4",
  "oneshot_up_r10",
  "oneshot_up_r10+full_int8",
  "oneshot_gp_r10",
  "oneshot_rp_r10",
  "oneshot_mp_t0.3",
  "iter_wt_c1",
  "iter_wt_c2",
  "iter_wt_c3",
  "iter_ft_c1",
  "iter_ft_c2",
  "iter_ft_c3",
]


def _hls(color):
  return colorsys.rgb_to_hls(*(int(color[i : i + 2], 16) / 255 for i in (1, 3, 5)))


def _key(style):
  return style["color"], style["hatch"], style["marker"]


def test_thirty_variants_get_thirty_distinct_styles():
  styles = palette.styles(THIRTY)
  assert list(styles) == THIRTY
  assert len({_key(s) for s in styles.values()}) == 30
  assert len({(s["color"], s["marker"], str(s["linestyle"])) for s in styles.values()}) == 30


def test_repaired_files_of_one_family_differ_from_each_other_and_from_full_int8():
  # --repair=float1,float2,...: every full_int8~float<N> of a family gets its own hatch and
  # marker, the family's colour, and none looks like the plain int8 file.
  repaired = [f"full_int8~float{n}" for n in range(1, 25)]
  repaired += ["full_int8~cle", "full_int8~int16x8", "full_int8~auto"]  # no-byte and searched
  pruned = [f"prune_0.9+full_int8~float{n}" for n in (1, 2, 3)] + ["prune_0.9+full_int8~auto"]
  styles = palette.styles(THIRTY + repaired + pruned)  # StyleError if two looked the same
  keys = {(s["color"], s["hatch"], s["marker"]) for s in styles.values()}
  assert len(keys) == len(styles) == len(set(THIRTY + repaired + pruned))
  assert {styles[v]["color"] for v in repaired} == {styles["dense"]["color"]}
  assert styles["full_int8~float1"]["hatch"] == "x"
  assert len({styles[v]["marker"] for v in repaired[:8]}) == 8


def test_children_share_their_parents_colour_and_differ_in_hatch_and_marker():
  styles = palette.styles(THIRTY)
  for child, parent in (
    ("prune_0.9+full_int8", "prune_0.9"),
    ("prune_0.9+sparse", "prune_0.9"),
    ("prune_0.9+full_int8+sparse", "prune_0.9"),
    ("full_int8", "dense"),
    ("float16", "dense"),
    ("float32+sparse", "dense"),
    ("oneshot_up_r10+full_int8", "oneshot_up_r10"),
  ):
    assert styles[child]["color"] == styles[parent]["color"], child
    assert styles[child]["hatch"] != styles[parent]["hatch"], child
    assert styles[child]["marker"] != styles[parent]["marker"], child
  assert styles["dense"]["hatch"] == "" and styles["prune_0.9"]["hatch"] == ""


def test_dense_is_always_the_same_neutral_colour():
  for variants in (["dense"], ["dense", "prune_0.9"], THIRTY, ["full_int8", "dense"]):
    assert palette.styles(variants)["dense"]["color"] == palette.DENSE_COLOR
  _, lightness, saturation = _hls(palette.DENSE_COLOR)
  assert saturation < 0.05 and lightness < 0.35  # grey, dark


@pytest.mark.parametrize(
  "levels",
  [
    ["prune_0.5", "prune_0.7", "prune_0.8", "prune_0.9", "prune_0.95"],
    ["oneshot_mp_t0.3", "oneshot_mp_r2", "oneshot_mp_r4", "oneshot_mp_r10"],  # t = .3 .5 .75 .9
    ["iter_wt_c1", "iter_wt_c2", "iter_wt_c3"],
  ],
)
def test_levels_of_one_method_share_a_hue_darker_with_more_pruning(levels):
  styles = palette.styles(THIRTY)
  hls = [_hls(styles[v]["color"]) for v in levels]  # least pruned first
  hues = [h for h, _, _ in hls]
  assert max(hues) - min(hues) < 0.02
  lightness = [l for _, l, _ in hls]
  assert lightness == sorted(lightness, reverse=True) and len(set(lightness)) == len(lightness)


def test_methods_get_different_hues():
  styles = palette.styles(THIRTY)
  hues = {
    m: _hls(styles[v]["color"])[0]
    for m, v in (
      ("gradual", "prune_0.9"),
      ("mp", "oneshot_mp_r10"),
      ("up", "oneshot_up_r10"),
      ("gp", "oneshot_gp_r10"),
      ("rp", "oneshot_rp_r10"),
      ("wt", "iter_wt_c1"),
      ("ft", "iter_ft_c1"),
    )
  }
  values = sorted(hues.values())
  gaps = [b - a for a, b in zip(values, values[1:])] + [1 + values[0] - values[-1]]
  assert min(gaps) > 0.015, hues


def test_deterministic_and_independent_of_order():
  first = palette.styles(THIRTY)
  assert palette.styles(list(THIRTY)) == first
  assert palette.styles(THIRTY[::-1]) == first
  assert (
    palette.styles(["prune_0.9", "dense"])["prune_0.9"]
    == palette.styles(["dense", "prune_0.9"])["prune_0.9"]
  )


def test_names_outside_the_grammar_still_get_distinct_styles():
  names = [f"variant_{i}" for i in range(25)] + ["dense (independent)", "float32"]
  styles = palette.styles(names)
  assert len({_key(s) for s in styles.values()}) == len(names)


def test_ink_contrasts_with_the_fill():
  assert palette.ink(palette.DENSE_COLOR) == "#ffffff"
  assert palette.ink("#f0f0f0") != "#ffffff"
  assert palette.luminance("#ffffff") == pytest.approx(1.0)
  assert palette.luminance("#000000") == pytest.approx(0.0)
