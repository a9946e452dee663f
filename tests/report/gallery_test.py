"""gallery / gallery_view: family galleries, kinds of change, CIE annotation export, escaping.

Expected counts come from the planted examples of the fake runs (tests/report/fake_run.py
docstring; `_make_kinds_run` below), not from the code under test.
"""

import base64
import dataclasses
import io
import json
import re

import numpy as np
from PIL import Image
import pytest

from tests.report import fake_run
from tf_forget.artifacts import names
from tf_forget.data import registry
from tf_forget.report import collect
from tf_forget.report import gallery
from tf_forget.report import gallery_view
from tf_forget.report.units import exemplars

CHILD = "prune_0.9+full_int8"
MEMBERS = 5


def _cies(run):
  """compressed variant -> Taxicab dict, as the `cie` unit gives it (`Measures.cie`)."""
  return {v: exemplars.taxicab_measures(run, v)[0] for v in run.eval if v != names.DENSE}


def _make_kinds_run(run_dir):
  """A `digits` run with every kind of change planted at clean positions (no member noise).

  Dense is `fake_run.noisy` except: FIXED, CHANGED wrong (label + 1) in every member. Then
  prune_0.9 and its child prune_0.9+full_int8 are both, on
    BROKEN (6): wrong (label + 1), d_T = 10;     FIXED (5): right, d_T = 10;
    CHANGED (4): label + 2, d_T = 10;            SAME (3): members 0, 1 wrong, d_T = 4;
  and differ on
    MIXED (2): prune_0.9 members 0, 1 wrong (same modal, d_T = 4), the child all wrong
      (broken, d_T = 10);
    CHILD_ONLY (2): prune_0.9 = dense (d_T = 0), the child all wrong (broken, d_T = 10).
  full_int8 (family dense) is wrong on BROKEN[:2] (broken); float16 equals dense.

  Returns:
    (ids, dict name -> positions).
  """
  test = registry.get("digits").load("test")
  ids, labels = test.ids, test.labels
  clean = np.flatnonzero((np.arange(labels.size) % fake_run.NOISE_PERIOD) >= 10)
  sizes = {"broken": 6, "fixed": 5, "changed": 4, "same": 3, "mixed": 2, "child_only": 2}
  pos, start = {}, 0
  for name, n in sizes.items():
    pos[name] = clean[start : start + n]
    start += n

  def plus(p, shift):
    return (labels[p] + shift) % 10

  for k in range(MEMBERS):
    dense = fake_run.noisy(labels, k, 10)
    dense[pos["fixed"]] = plus(pos["fixed"], 1)
    dense[pos["changed"]] = plus(pos["changed"], 1)
    pruned = dense.copy()
    pruned[pos["broken"]] = plus(pos["broken"], 1)
    pruned[pos["fixed"]] = labels[pos["fixed"]]
    pruned[pos["changed"]] = plus(pos["changed"], 2)
    if k < 2:
      pruned[pos["same"]] = plus(pos["same"], 1)
      pruned[pos["mixed"]] = plus(pos["mixed"], 1)
    child = pruned.copy()
    child[pos["mixed"]] = plus(pos["mixed"], 1)
    child[pos["child_only"]] = plus(pos["child_only"], 1)
    quant = dense.copy()
    quant[pos["broken"][:2]] = plus(pos["broken"][:2], 1)
    for variant, pred in (
      ("dense", dense),
      ("prune_0.9", pruned),
      (CHILD, child),
      ("full_int8", quant),
      ("float16", dense),
    ):
      fake_run.write_member(run_dir, variant, k, "test", ids, labels, pred, 10, "digits")
  return ids, pos


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("digits"))
  ids, _, lost, gained = fake_run.make_digits_run(run_dir, corrupted=False)
  run = collect.load_run(run_dir)
  return run, _cies(run), ids, lost, gained


@pytest.fixture(scope="module")
def kinds(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("kinds"))
  ids, pos = _make_kinds_run(run_dir)
  run = collect.load_run(run_dir)
  return run, _cies(run), ids, pos


@pytest.fixture(scope="module")
def biased(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("biased"))
  _, _, _, planted = fake_run.make_biased_run(run_dir, members=3)
  run = collect.load_run(run_dir)
  return run, _cies(run), planted


def _kinds(cards):
  return {k: sum(c["kind"] == k for c in cards) for k in gallery.KINDS}


def test_kind_of_follows_the_definitions():
  # (true label, dense modal, compressed modal) -> kind, as the gallery defines it.
  assert gallery.kind_of(3, 3, 8) == "broken"
  assert gallery.kind_of(3, 8, 3) == "fixed"
  assert gallery.kind_of(3, 8, 9) == "changed"
  assert gallery.kind_of(3, 3, 3) == "same modal" and gallery.kind_of(3, 8, 8) == "same modal"
  got = gallery.kind_of(np.array([3, 3, 3, 3]), np.array([3, 8, 8, 8]), np.array([8, 3, 9, 8]))
  assert list(got) == ["broken", "fixed", "changed", "same modal"]


def test_digits_kinds_are_the_planted_examples(digits):
  run, cies, ids, lost, gained = digits
  g = gallery.build_families(run, cies, size=50, with_images=False)
  assert list(g) == ["dense", "prune_0.9"]
  assert g["dense"] == {"variants": ["full_int8"], "cards": []}  # full_int8 equals dense
  cards = g["prune_0.9"]["cards"]
  assert len(cards) == 40  # only the 40 planted examples have d_T > 0
  assert {c["id"] for c in cards if c["kind"] == "broken"} == set(ids[lost].tolist())
  assert {c["id"] for c in cards if c["kind"] == "fixed"} == set(ids[gained].tolist())
  assert _kinds(cards) == {"broken": 20, "changed": 0, "fixed": 20, "same modal": 0}
  for c in cards:
    assert c["kind"] == ("broken" if c["label"] == 3 else "fixed")
    assert [r["variant"] for r in c["variants"]] == ["prune_0.9"]
    assert c["variants"][0]["distance"] == c["variants"][0]["max_distance"] == 2 * MEMBERS
  assert sorted(c["rank"] for c in cards) == list(range(1, 41))
  small = gallery.build_families(run, cies, size=12, with_images=False)["prune_0.9"]["cards"]
  assert [c["id"] for c in small] == [c["id"] for c in cards[:12]]


def test_families_group_variants_by_family_dense_first():
  assert gallery.families([CHILD, "full_int8", "prune_0.9", "float16"]) == {
    "dense": ["full_int8", "float16"],
    "prune_0.9": [CHILD, "prune_0.9"],
  }


def test_kinds_and_children_deduplicated_per_family(kinds):
  run, cies, ids, pos = kinds
  g = gallery.build_families(run, cies, size=30, with_images=False)
  assert list(g) == ["dense", "prune_0.9"]
  assert g["dense"]["variants"] == ["float16", "full_int8"]
  assert g["prune_0.9"]["variants"] == ["prune_0.9", CHILD]
  cards = g["prune_0.9"]["cards"]
  assert len(cards) == 22 == len({c["id"] for c in cards})  # each planted example once
  assert _kinds(cards) == {"broken": 6 + 2 + 2, "changed": 4, "fixed": 5, "same modal": 3}
  by_id = {c["id"]: c for c in cards}
  for p in pos["mixed"]:
    c = by_id[int(ids[p])]
    rows = {r["variant"]: r for r in c["variants"]}
    assert c["kind"] == "broken" and rows[CHILD]["kind"] == "broken"
    assert rows["prune_0.9"]["kind"] == "same modal" and rows["prune_0.9"]["distance"] == 4
  for p in pos["child_only"]:
    assert [r["variant"] for r in by_id[int(ids[p])]["variants"]] == [CHILD]
  for p in pos["same"]:
    assert [r["distance"] for r in by_id[int(ids[p])]["variants"]] == [4, 4]
  dense_cards = g["dense"]["cards"]
  assert {c["id"] for c in dense_cards} == set(ids[pos["broken"][:2]].tolist())
  assert all(
    c["kind"] == "broken" and [r["variant"] for r in c["variants"]] == ["full_int8"]
    for c in dense_cards
  )


@pytest.mark.parametrize("size", [1, 5, 13])
def test_cards_are_the_best_ranked_examples(kinds, size):
  run, cies, _, _ = kinds
  fam = {v: c for v, c in cies.items() if names.family(v) == "prune_0.9"}
  cards = gallery.build_families(run, cies, size=size, with_images=False)["prune_0.9"]["cards"]
  # Brute force over every example: best rank = min over variants with d_T > 0.
  best = {}
  for c in fam.values():
    for r, p in enumerate(c["order"]):
      if c["distance"][p] > 0:
        best[int(p)] = min(best.get(int(p), r + 1), r + 1)
  want = sorted(best.values())[:size]
  assert [c["rank"] for c in cards] == want
  for c in cards:
    assert best[c["position"]] == c["rank"] == min(r["rank"] for r in c["variants"])
    assert [r["rank"] for r in c["variants"]] == sorted(r["rank"] for r in c["variants"])


def test_json_ready_and_flat_table(kinds):
  run, cies, _, _ = kinds
  g = gallery.build_families(run, cies, size=8)
  plain = gallery.without_images(g)
  assert json.loads(json.dumps(plain)) == plain
  assert all("png" in c for f in g.values() for c in f["cards"])
  frame = gallery.table(plain)
  assert len(frame) == sum(len(c["variants"]) for f in plain.values() for c in f["cards"])
  assert set(frame.family) == {"dense", "prune_0.9"}
  assert set(frame.variant) == {"full_int8", "prune_0.9", CHILD}


def test_annotation_table_rows_are_the_cies_at_the_percentile(digits, kinds):
  run, cies, ids, lost, gained = digits
  t = gallery.annotation_table(run, cies, percentile=90)
  assert list(t.columns) == list(gallery.ANNOTATION_COLUMNS) + ["annotation"]
  # p90 of 500 examples selects 50 (docs/spec.md §4.1); 40 of them have d_T > 0, all planted.
  assert len(t) == 40 and set(t.variant) == {"prune_0.9"} and set(t.family) == {"prune_0.9"}
  assert set(t.id[t.kind == "broken"]) == set(ids[lost].tolist())
  assert set(t.id[t.kind == "fixed"]) == set(ids[gained].tolist())
  assert list(t["rank"]) == list(range(1, 41)) and (t.annotation == "").all()
  assert (t.distance == 10).all() and (t.max_distance == 10).all()
  assert len(gallery.annotation_table(run, cies, percentile=95)) == 25  # ceil(0.05 · 500)
  run, cies, _, _ = kinds
  t = gallery.annotation_table(run, cies, percentile=90)
  counts = t.groupby(["variant", "kind"]).size().to_dict()
  assert counts == {
    ("full_int8", "broken"): 2,
    ("prune_0.9", "broken"): 6,
    ("prune_0.9", "fixed"): 5,
    ("prune_0.9", "changed"): 4,
    ("prune_0.9", "same modal"): 3 + 2,
    (CHILD, "broken"): 6 + 2 + 2,
    (CHILD, "fixed"): 5,
    (CHILD, "changed"): 4,
    (CHILD, "same modal"): 3,
  }
  assert set(t.family[t.variant == CHILD]) == {"prune_0.9"}
  p99 = gallery.annotation_table(run, cies, percentile=99)  # ceil(0.01 · 500) = 5 per variant
  assert p99.groupby("variant").size().to_dict() == {"full_int8": 2, "prune_0.9": 5, CHILD: 5}


def test_annotation_table_attributes(biased):
  run, cies, planted = biased
  t = gallery.annotation_table(run, cies, percentile=80)
  assert [c for c in t.columns if c.startswith("attr_")] == ["attr_Faint", "attr_Inverted"]
  assert sorted(t.position) == sorted(planted.tolist())  # only the planted examples changed
  assert t.attr_Inverted.all() and (t.kind == "broken").all()
  assert (t.label_name == "zero_or_one (1)").all()


def _natural_sizes(page):
  out = []
  for w, h, data in re.findall(
    r"<img [^>]*width=\"(\d+)\" height=\"(\d+)\" src=\"data:image/png;base64,([^\"]+)\"", page
  ):
    with Image.open(io.BytesIO(base64.b64decode(data))) as im:
      out.append(((int(w), int(h)), im.size))
  return out


def test_view_cards_legend_and_natural_size_thumbnails(kinds):
  run, cies, _, _ = kinds
  g = gallery.build_families(run, cies, size=30)
  page = gallery_view.html(g, protected=())
  assert page.count("class=\"gal-card ") == 22 + 2
  assert page.count("class=\"gal-card gal-broken\"") == 10 + 2
  assert page.count("class=\"gal-card gal-fixed\"") == 5
  assert page.count("class=\"gal-card gal-changed\"") == 4
  assert page.count("class=\"gal-card gal-same\"") == 3
  legend = re.findall(r"<p class=\"gal-legend\">(.*?)</p>", page)[1]
  assert re.sub(r"<[^>]+>", "", legend) == "22 cards:broken 10fixed 5changed 4same modal 3"
  for kind in ("broken", "fixed", "changed", "same modal"):  # the word, not only the colour
    assert f"<span class=\"gal-word {gallery_view.CLASS[kind]}\">{kind}</span>" in page
  sizes = _natural_sizes(page)
  assert len(sizes) == 24 == page.count("<img ")
  assert all(attr == natural == (64, 64) for attr, natural in sizes)  # 8x8 digits x 8
  rule = re.search(r"\.gal-card img\{([^}]*)\}", gallery_view.CSS).group(1)
  assert "width" not in rule.replace("max-width:none", "") and "height" not in rule
  assert "No example changed" not in page
  empty = gallery_view.html({"dense": {"variants": ["float16"], "cards": []}}, ())
  assert "No example changed" in empty and "gal-card" not in empty


def test_hostile_names_are_escaped(digits):
  run, cies, _, _, _ = digits
  hostile = tuple(f"<script>alert({i})</script>&\"" for i in range(10))
  run = dataclasses.replace(run, class_names=hostile)
  g = gallery.build_families(run, cies, size=3, with_images=False)
  g["<b>fam</b>"] = {
    "variants": ["<i>v</i>"],
    "cards": [
      dict(
        g["prune_0.9"]["cards"][0],
        attributes={"<u>attr</u>": True},
        variants=[dict(g["prune_0.9"]["cards"][0]["variants"][0], variant="<i>v</i>")],
      )
    ],
  }
  page = gallery_view.html(g, protected=())
  assert "<script>" not in page and "<b>fam" not in page and "<i>v" not in page
  assert "<u>" not in page and "&lt;u&gt;attr&lt;/u&gt;=1" in page
  assert "&lt;script&gt;alert(3)&lt;/script&gt;&amp;&quot; (3)" in page
  assert "&lt;b&gt;fam&lt;/b&gt;" in page and "&lt;i&gt;v&lt;/i&gt;" in page
  t = gallery.annotation_table(run, cies)
  assert set(t.label_name[t.label == 3]) == {hostile[3] + " (3)"}
