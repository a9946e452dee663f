"""Output divergence of every compressed file from its reference, from the saved logits.

Top-1 measures see only the arg max. For every compressed variant v on the evaluation split and
every member pair (k_0, k_v) of `run.pairing_of(v)` (`pairing.py`), the reference is dense
member k_0's float32 file (the `dense` variant's predictions): the same network for quantized
files, one-shot and prune-retrain members (their parent), an independently trained network for
gradual-pruning members (index pairing, docs/spec.md §1.3; labelled "independent member k_0"). From
the logits of both predictions files (read once each, rows aligned on dense's example ids),
`tf_forget.stats.divergence.divergence` gives per example KL(p ‖ q) of the softmax outputs in
nats (p the reference's, q the candidate's), Δp = q_y − p_y of the true class y, top-1
agreement and flips (broken / fixed / changed, `paired.flips`).

Design (docs/spec.md §1.3: the member — its training seed — is the unit of a population):

* one pair (P = 1; every K = 1 audit): the mean's 95% interval is the Student t interval over
  the N test examples (`divergence.summarize`), design `examples`;
* P ≥ 2 pairs: the mean is the mean over pairs of the per-pair means (the pooled mean: every
  pair has the same N examples) and its interval the Student t interval over the P per-pair
  means (t_{0.975, P−1}), design `pairs` — one pair's examples are not independent of
  another's (the same images), the pairs are;
* every interval is clipped to what the quantity can be (KL >= 0, Δp in [−1, 1]): a t
  interval over a few skewed values can reach past 0;
* percentiles (p50 / p90 / p99, max; numpy's linear) always over the P·N pooled values; flip
  counts are summed over the pairs and the flip rate is (broken + fixed + changed) / (P·N).

Δp's bad tail is negative: besides its mean, p50, p90 and p99 the tables give its min, p1 and
p10 (the max, p99 and p90 of −Δp negated; linear percentiles are symmetric under negation, up
to rounding). The same per class (n = the class's test examples) and per subgroup of the
protected attributes (`single_network.subgroup_masks`: aggregate, each value, intersections;
docs/spec.md §4.2). The gallery rows: per variant the examples of largest KL > 0, each once at its
largest KL over the pairs, with that pair. With K ≥ 2 dense members one more `divergence`
row, `dense (independent)`: dense member k against member k + 1 (mod K), what two networks
trained by the same recipe differ by — the yardstick for the independent pairs.

A variant whose files (or whose reference's) hold no logits gets a note and no rows (never 0).
The pairs' values pooled and their intervals: `divergence_pooling`. Numpy / pandas and
`tf_forget.stats`; the logits are read with `artifacts.predictions.read`.
"""

import numpy as np
import pandas as pd

from tf_forget.artifacts import names
from tf_forget.artifacts import predictions
from tf_forget.report import collect
from tf_forget.report import divergence_pooling
from tf_forget.report import gallery
from tf_forget.report import pairing as pairing_lib
from tf_forget.report import single_network
from tf_forget.stats import divergence
from tf_forget.stats import validate

KEY = "divergence"  # the settings and notes key
BASELINE = "dense (independent)"
SAME, INDEPENDENT = "same network", "independent member"
SAME_TOP1 = "same top-1"  # an example's kind when neither flip happened
COLUMNS = [
  "variant",
  "pairing",
  "reference",
  "pairs",
  "pair_members",
  "design",
  "method",
  "n",
  "kl_mean",
  "kl_low",
  "kl_high",
  "kl_p50",
  "kl_p90",
  "kl_p99",
  "kl_max",
  "delta_p_mean",
  "delta_p_low",
  "delta_p_high",
  "delta_p_min",
  "delta_p_p1",
  "delta_p_p10",
  "delta_p_p50",
  "delta_p_p90",
  "delta_p_p99",
  "agreement",
  "flip_rate",
  "broken",
  "fixed",
  "changed",
]
GROUP_STATS = [
  "n",
  "kl_mean",
  "kl_low",
  "kl_high",
  "kl_p90",
  "kl_max",
  "delta_p_mean",
  "delta_p_low",
  "delta_p_high",
  "delta_p_min",
  "delta_p_p10",
  "flip_rate",
]
CLASS_COLUMNS = ["variant", "class", "class_name"] + GROUP_STATS + ["design"]
SUBGROUP_COLUMNS = ["variant", "subgroup"] + GROUP_STATS + ["design"]
EXAMPLE_COLUMNS = [
  "variant",
  "rank",
  "id",
  "position",
  "label",
  "label_name",
  "reference_prediction",
  "candidate_prediction",
  "kind",
  "kl",
  "delta_p",
  "k_dense",
  "k_variant",
]


def reference_words(run, variant, pairs):
  """The design "same network", or "independent member k" (k the dense member when there is
  one pair)."""
  if variant != BASELINE and pairing_lib.is_paired(run, variant):
    return SAME
  return f"{INDEPENDENT} {pairs[0][0] if len(pairs) == 1 else 'k'}"


def _plan(run, notes):
  """{variant: [(k_dense, k_variant)]} of the compressed variants (plus the baseline)."""
  dense = [int(k) for k in run.eval[names.DENSE].members]
  plan = {}
  for variant in run.eval:
    if variant == names.DENSE:
      continue
    pairs = [(int(a), int(b)) for a, b in run.pairing_of(variant)["pairs"]]
    if not pairs:
      notes.append(f"{variant}: no member paired with a dense member; no output divergence")
    else:
      plan[variant] = pairs
  if len(dense) >= 2:
    plan[BASELINE] = [(k, dense[(i + 1) % len(dense)]) for i, k in enumerate(dense)]
  return plan


def _logits(run, variant, k, order):
  """float `[N, C]` logits of one predictions file in dense's row order, or None without."""
  path = predictions.path(run.run_dir, variant, k, run.eval_split)
  try:
    data = predictions.read(path)
  except predictions.PredictionsError as e:
    raise collect.CollectError(str(e)) from e
  if "logits" not in data:
    return None
  if variant not in order:
    order[variant] = collect.row_order(
      data["ids"], run.eval[names.DENSE].ids, f"{variant}/{k}/{run.eval_split}"
    )
  return data["logits"] if order[variant] is None else data["logits"][order[variant]]


def pair_results(run, plan, masks, size, confidence, notes):
  """{variant: [(k_dense, k_variant, `divergence.Divergence`)]}: each dense file read once as
  a reference (the baseline reads dense files again as candidates), each other file once."""
  y, order, out, missing = run.eval[names.DENSE].labels, {}, {}, {}
  by_ref = {}
  for variant, pairs in plan.items():
    for k0, kt in pairs:
      by_ref.setdefault(k0, []).append((variant, kt))
  for k0 in sorted(by_ref):
    ref = _logits(run, names.DENSE, k0, order)
    for variant, kt in by_ref[k0]:
      source = names.DENSE if variant == BASELINE else variant
      cand = None if ref is None else _logits(run, source, kt, order)
      if cand is None:
        missing.setdefault(variant, []).append(
          f"{names.DENSE}/{k0}" if ref is None else f"{source}/{kt}"
        )
        continue
      try:
        d = divergence.divergence(ref, cand, y, masks, gallery=size, confidence=confidence)
      except validate.StatsInputError as e:
        notes.append(f"{variant}: pair dense/{k0}, {source}/{kt} left out ({e})")
        continue
      out.setdefault(variant, []).append((k0, kt, d))
  for variant, files in missing.items():
    left = "no output divergence" if variant not in out else "those pairs left out"
    notes.append(
      f"{variant}: no saved logits in {', '.join(files)} (predictions without logits); {left}"
    )
  return {v: sorted(r, key=lambda x: x[1]) for v, r in out.items()}


def variant_row(run, variant, pooled):
  """The variant's `divergence` row (`design` / `method`: see the module docstring)."""
  results = pooled.results
  row = pooled.groups("overall")[0]
  counts = {k: sum(d.flips.counts[k] for _, _, d in results) for k in single_network.FLIP_KINDS}
  design, method = (
    ("examples", f"Student t over the {row['n']} test examples (one member pair)")
    if len(results) < 2
    else ("pairs", f"Student t over the {len(results)} member pairs' means; percentiles pooled")
  )
  label = (
    pairing_lib.LABELS["independent"] if variant == BASELINE else run.pairing_of(variant)["label"]
  )
  return dict(
    row,
    variant=variant,
    pairing=label,
    reference=reference_words(run, variant, [(k0, kt) for k0, kt, _ in results]),
    pairs=len(results),
    pair_members=", ".join(f"{k0}→{kt}" for k0, kt, _ in results),
    design=design,
    method=method,
    agreement=1 - row["flip_rate"],
    **counts,
  )


def example_rows(run, variant, results, size, paths=None):
  """The variant's `divergence_examples` rows: largest KL > 0 first, each example once; with
  `paths` ({id: path}, `collect.example_paths`) each example's `path`."""
  dense, pop = run.eval[names.DENSE], run.eval[variant]
  row_0 = {int(k): r for r, k in enumerate(dense.members)}
  row_t = {int(k): r for r, k in enumerate(pop.members)}
  class_names = single_network.class_names_of(run)
  kl = np.stack([d.kl for _, _, d in results])
  best = np.argmax(kl, axis=0)
  top = kl[best, np.arange(kl.shape[1])]
  rows = []
  for rank, i in enumerate(divergence.largest(top, size)):
    if top[i] <= 0:
      break
    k0, kt, d = results[best[i]]
    kind = next((k for k in single_network.FLIP_KINDS if getattr(d.flips, k)[i]), SAME_TOP1)
    label = int(dense.labels[i])
    path = {} if paths is None else {"path": paths.get(int(dense.ids[i]), "")}
    rows.append(
      {
        "variant": variant,
        "rank": rank + 1,
        "id": int(dense.ids[i]),
        **path,
        "position": int(i),
        "label": label,
        "label_name": class_names[label],
        "reference_prediction": int(dense.top1[row_0[k0], i]),
        "candidate_prediction": int(pop.top1[row_t[kt], i]),
        "kind": kind,
        "kl": float(d.kl[i]),
        "delta_p": float(d.delta_p[i]),
        "k_dense": k0,
        "k_variant": kt,
      }
    )
  return rows


def settings(confidence, size):
  """The report's `settings.divergence`."""
  return {
    "units": "nats",
    "confidence": confidence,
    "interval": f"{divergence.INTERVAL_METHOD}: over the test examples with one member "
    "pair, over the pairs' means with several (docs/spec.md §1.3)",
    "percentiles": f"{divergence.PERCENTILE_METHOD} (numpy), pooled over pairs",
    "reference": "the dense member's float32 file, paired as report.pairing says",
    "examples_per_variant": size,
  }


def compute(run, size=divergence.GALLERY, confidence=divergence.CONFIDENCE):
  """The output-divergence tables of a run (see the module docstring).

  Args:
    run: `collect.Run`.
    size: largest-KL examples per variant (`divergence_examples`).
    confidence: level of the mean intervals.

  Returns:
    (tables: `divergence`, `divergence_classes`, `divergence_examples` and, with protected
    attributes, `divergence_subgroups`; notes: {KEY: [str]}; settings: {KEY: dict}); all
    three empty without a compressed variant.

  Raises:
    collect.CollectError: a predictions file that cannot be read or whose ids differ.
  """
  if len(run.eval) < 2:
    return {}, {}, {}
  notes = []
  masks, missing = single_network.subgroup_masks(run)
  mask_notes = (
    ["protected attributes missing from the evaluation split; no divergence_subgroups"]
    if missing
    else []
  )
  plan = _plan(run, notes)
  results = pair_results(run, plan, masks, size, confidence, notes)
  y = run.eval[names.DENSE].labels
  tops, classes, groups, examples = [], [], [], []
  class_names = single_network.class_names_of(run)
  paths = collect.example_paths(run)
  for variant in [v for v in plan if v in results]:
    pooled = divergence_pooling.Pooled(results[variant], y, confidence)
    tops.append(variant_row(run, variant, pooled))
    if variant == BASELINE:
      continue
    design = tops[-1]["design"]
    classes += [
      dict(s, variant=variant, design=design, **{"class": c, "class_name": class_names[c]})
      for c, s in enumerate(pooled.groups("by_class", num_classes=run.num_classes))
    ]
    if masks is not None:
      groups += [
        dict(s, variant=variant, subgroup=name, design=design)
        for name, s in zip(masks, pooled.groups("by_subgroup", masks=masks))
      ]
    examples += example_rows(run, variant, results[variant], size, paths)
  tables = {
    "divergence": pd.DataFrame(tops, columns=COLUMNS),
    "divergence_classes": pd.DataFrame(classes, columns=CLASS_COLUMNS),
    "divergence_examples": pd.DataFrame(
      examples,
      columns=(
        EXAMPLE_COLUMNS if paths is None else EXAMPLE_COLUMNS[:3] + ["path"] + EXAMPLE_COLUMNS[3:]
      ),
    ),
  }
  if masks is not None:
    tables["divergence_subgroups"] = pd.DataFrame(groups, columns=SUBGROUP_COLUMNS)
  return tables, {KEY: notes + mask_notes}, {KEY: settings(confidence, size)}


def thumbnails(run, examples):
  """{example id: PNG bytes} of the `divergence_examples` rows (`gallery.thumbnail`), {}
  without rows or without a data set to read images from."""
  if examples is None or examples.empty or run.dataset is None:
    return {}
  ids = sorted({int(i) for i in examples["id"]})
  return {i: gallery.thumbnail(img) for i, img in zip(ids, collect.images_for(run, ids))}
