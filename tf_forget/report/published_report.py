"""Published test sets in the report: 000 Table 8 (ImageNet-A) and CIFAR-10.1 (docs/spec.md §3.6).

With `--robustness=published` (`tf_forget.corruptions.published_suites`) the audit evaluates the
robustness members on the data set's published test sets as extra splits besides the
corrupted ones (`tf_forget.data.protocols`, `Published.extra`): `imagenet_a` for ImageNet,
`cifar10_1` for CIFAR-10. Their predictions keep the logits.

* `imagenet_a` (000 Table 8): per variant, top-1 / top-5 averaged over members, and normalized
  100·(A_t / A_0 − 1) against dense (docs/spec.md §3.6; `tf_forget.stats.robustness`, one
  "severity"). 1000-way argmax by default (000's dense top-1 of 0.89% suggests no masking); with
  `imagenet_a_mask=True` also Hendrycks' protocol, `classes` = 200: the argmax over the logits
  of ImageNet-A's 200 classes only (`masked_topk`), computed here from the stored logits — the
  stored predictions are not changed.
* `published_splits` (the other published test sets, e.g. CIFAR-10.1, 003 Table 11): per
  variant and split, top-1 (top-5 with more than 5 classes), its change against dense in points
  and normalized as above, and the same members' top-1 on the clean eval split beside it.

ImageNet-A's 200 classes in the 1000-way label space (tfds' `imagenet_a` labels its images with
`imagenet2012`'s sorted wnids, `labels.txt`), from two sources that agree (a test checks it):
`IMAGENET_A_INDICES_IN_1K` is Hendrycks' reference evaluation, github.com/hendrycks/
natural-adv-examples `eval.py` (commit 2f866f5b870d3099e3211a92a137a77531c09874):
`indices_in_1k = [k for k in thousand_k_to_200 if thousand_k_to_200[k] != -1]`;
`IMAGENET_A_WNIDS` the 200 ImageNet-A class folders (WordNet ids) in the same order, so that
`labels.txt[IMAGENET_A_INDICES_IN_1K[i]] == IMAGENET_A_WNIDS[i]`.
"""

import numpy as np
import pandas as pd

from tf_forget.artifacts import names
from tf_forget.artifacts import predictions as predictions_lib
from tf_forget.data.protocols import protocol_registry as protocols
from tf_forget.report import collect
from tf_forget.report import html
from tf_forget.report import unit
from tf_forget.stats import accuracy
from tf_forget.stats import robustness

IMAGENET_A = "imagenet_a"
TOPK = 5

IMAGENET_A_INDICES_IN_1K = (
  6,
  11,
  13,
  15,
  17,
  22,
  23,
  27,
  30,
  37,
  39,
  42,
  47,
  50,
  57,
  70,
  71,
  76,
  79,
  89,
  90,
  94,
  96,
  97,
  99,
  105,
  107,
  108,
  110,
  113,
  124,
  125,
  130,
  132,
  143,
  144,
  150,
  151,
  207,
  234,
  235,
  254,
  277,
  283,
  287,
  291,
  295,
  298,
  301,
  306,
  307,
  308,
  309,
  310,
  311,
  313,
  314,
  315,
  317,
  319,
  323,
  324,
  326,
  327,
  330,
  334,
  335,
  336,
  347,
  361,
  363,
  372,
  378,
  386,
  397,
  400,
  401,
  402,
  404,
  407,
  411,
  416,
  417,
  420,
  425,
  428,
  430,
  437,
  438,
  445,
  456,
  457,
  461,
  462,
  470,
  472,
  483,
  486,
  488,
  492,
  496,
  514,
  516,
  528,
  530,
  539,
  542,
  543,
  549,
  552,
  557,
  561,
  562,
  569,
  572,
  573,
  575,
  579,
  589,
  606,
  607,
  609,
  614,
  626,
  627,
  640,
  641,
  642,
  643,
  658,
  668,
  677,
  682,
  684,
  687,
  701,
  704,
  719,
  736,
  746,
  749,
  752,
  758,
  763,
  765,
  768,
  773,
  774,
  776,
  779,
  780,
  786,
  792,
  797,
  802,
  803,
  804,
  813,
  815,
  820,
  823,
  831,
  833,
  835,
  839,
  845,
  847,
  850,
  859,
  862,
  870,
  879,
  880,
  888,
  890,
  897,
  900,
  907,
  913,
  924,
  932,
  933,
  934,
  937,
  943,
  945,
  947,
  951,
  954,
  956,
  957,
  959,
  971,
  972,
  980,
  981,
  984,
  986,
  987,
  988,
)
IMAGENET_A_WNIDS = (
  "n01498041",
  "n01531178",
  "n01534433",
  "n01558993",
  "n01580077",
  "n01614925",
  "n01616318",
  "n01631663",
  "n01641577",
  "n01669191",
  "n01677366",
  "n01687978",
  "n01694178",
  "n01698640",
  "n01735189",
  "n01770081",
  "n01770393",
  "n01774750",
  "n01784675",
  "n01819313",
  "n01820546",
  "n01833805",
  "n01843383",
  "n01847000",
  "n01855672",
  "n01882714",
  "n01910747",
  "n01914609",
  "n01924916",
  "n01944390",
  "n01985128",
  "n01986214",
  "n02007558",
  "n02009912",
  "n02037110",
  "n02051845",
  "n02077923",
  "n02085620",
  "n02099601",
  "n02106550",
  "n02106662",
  "n02110958",
  "n02119022",
  "n02123394",
  "n02127052",
  "n02129165",
  "n02133161",
  "n02137549",
  "n02165456",
  "n02174001",
  "n02177972",
  "n02190166",
  "n02206856",
  "n02219486",
  "n02226429",
  "n02231487",
  "n02233338",
  "n02236044",
  "n02259212",
  "n02268443",
  "n02279972",
  "n02280649",
  "n02281787",
  "n02317335",
  "n02325366",
  "n02346627",
  "n02356798",
  "n02361337",
  "n02410509",
  "n02445715",
  "n02454379",
  "n02486410",
  "n02492035",
  "n02504458",
  "n02655020",
  "n02669723",
  "n02672831",
  "n02676566",
  "n02690373",
  "n02701002",
  "n02730930",
  "n02777292",
  "n02782093",
  "n02787622",
  "n02793495",
  "n02797295",
  "n02802426",
  "n02814860",
  "n02815834",
  "n02837789",
  "n02879718",
  "n02883205",
  "n02895154",
  "n02906734",
  "n02948072",
  "n02951358",
  "n02980441",
  "n02992211",
  "n02999410",
  "n03014705",
  "n03026506",
  "n03124043",
  "n03125729",
  "n03187595",
  "n03196217",
  "n03223299",
  "n03250847",
  "n03255030",
  "n03291819",
  "n03325584",
  "n03355925",
  "n03384352",
  "n03388043",
  "n03417042",
  "n03443371",
  "n03444034",
  "n03445924",
  "n03452741",
  "n03483316",
  "n03584829",
  "n03590841",
  "n03594945",
  "n03617480",
  "n03666591",
  "n03670208",
  "n03717622",
  "n03720891",
  "n03721384",
  "n03724870",
  "n03775071",
  "n03788195",
  "n03804744",
  "n03837869",
  "n03840681",
  "n03854065",
  "n03888257",
  "n03891332",
  "n03935335",
  "n03982430",
  "n04019541",
  "n04033901",
  "n04039381",
  "n04067472",
  "n04086273",
  "n04099969",
  "n04118538",
  "n04131690",
  "n04133789",
  "n04141076",
  "n04146614",
  "n04147183",
  "n04179913",
  "n04208210",
  "n04235860",
  "n04252077",
  "n04252225",
  "n04254120",
  "n04270147",
  "n04275548",
  "n04310018",
  "n04317175",
  "n04344873",
  "n04347754",
  "n04355338",
  "n04366367",
  "n04376876",
  "n04389033",
  "n04399382",
  "n04442312",
  "n04456115",
  "n04482393",
  "n04507155",
  "n04509417",
  "n04532670",
  "n04540053",
  "n04554684",
  "n04562935",
  "n04591713",
  "n04606251",
  "n07583066",
  "n07695742",
  "n07697313",
  "n07697537",
  "n07714990",
  "n07718472",
  "n07720875",
  "n07734744",
  "n07749582",
  "n07753592",
  "n07760859",
  "n07768694",
  "n07831146",
  "n09229709",
  "n09246464",
  "n09472597",
  "n09835506",
  "n11879895",
  "n12057211",
  "n12144580",
  "n12267677",
)


def masked_topk(scores, indices=IMAGENET_A_INDICES_IN_1K, k=TOPK):
  """Top-k labels over a subset of classes, in the full label space (Hendrycks' 200-class mask).

  Args:
    scores: float `[N, C]` dequantized logits (1000-way).
    indices: ascending class indices kept (default ImageNet-A's 200).
    k: labels per example.

  Returns:
    int `[N, k]` class indices of `scores`' space by decreasing score among `indices`; ties go
    to the lowest index (docs/spec.md §1.2: `indices` ascending keeps the order).
  """
  indices = np.asarray(indices, np.int64)
  order = predictions_lib.topk(np.asarray(scores)[:, indices], min(k, indices.size))
  return indices[order]


def _masked_accuracies(run, variant, pop):
  """(top-1 `[members]`, top-5 `[members]`, labels outside the mask) from the stored logits.

  Raises:
    collect.CollectError: a member's file without logits.
  """
  top1, top5, outside = [], [], 0
  for k in pop.members:
    path = predictions_lib.path(run.run_dir, variant, int(k), IMAGENET_A)
    data = predictions_lib.read(path)
    if "logits" not in data:
      raise collect.CollectError(f"{variant}/{int(k)}/{IMAGENET_A}: no logits stored ({path})")
    labels = data["labels"]
    masked = masked_topk(data["logits"])
    top1.append(accuracy.top1_accuracy(masked[None, :, 0], labels)[0])
    top5.append(accuracy.topk_accuracy(masked[None], labels, k=TOPK)[0])
    outside = max(outside, int(np.sum(~np.isin(labels, IMAGENET_A_INDICES_IN_1K))))
  return np.asarray(top1), np.asarray(top5), outside


def _table8(accs, classes):
  """Table 8 rows of one label space from {variant: (top-1 [members], top-5 [members])}."""
  t = robustness.robustness_table(
    {(v, IMAGENET_A): a for v, (a, _) in accs.items()},
    {(v, IMAGENET_A): b for v, (_, b) in accs.items()},
    dense=names.DENSE,
  )
  t.insert(1, "classes", classes)
  t["members"] = [accs[v][0].size for v in t.variant]
  return t.drop(columns=["corruption"])


def imagenet_a_table(run, mask=False):
  """000 Table 8: ImageNet-A top-1 / top-5 per variant, absolute and normalized (docs/spec.md §3.6).

  Args:
    run: a `collect.Run` with an `imagenet_a` split.
    mask: also the 200-class masked rows (Hendrycks' protocol; needs stored logits).

  Returns:
    (DataFrame columns `variant`, `classes` (1000, and 200 with `mask`), `top1`, `top5`,
    `top1_norm`, `top5_norm` (%), `members`, `examples`, or None without the split or its
    dense population; list of notes).
  """
  pops = {
    v: run.predictions[v][IMAGENET_A] for v in run.variants if IMAGENET_A in run.predictions[v]
  }
  if names.DENSE not in pops:
    return None, [] if not pops else [f"no dense predictions on {IMAGENET_A}"]
  full = {
    v: (accuracy.top1_accuracy(p.top1, p.labels), accuracy.topk_accuracy(p.topk, p.labels, k=TOPK))
    for v, p in pops.items()
  }
  frames, notes = [_table8(full, 1000)], []
  if mask:
    try:
      masked = {v: _masked_accuracies(run, v, p) for v, p in pops.items()}
    except (collect.CollectError, predictions_lib.PredictionsError) as e:
      notes.append(f"200-class mask not computed: {e}")
    else:
      frames.append(_table8({v: m[:2] for v, m in masked.items()}, 200))
      outside = masked[names.DENSE][2]
      if outside:
        notes.append(
          f"{outside} {IMAGENET_A} labels are outside its 200 classes: never right under the mask"
        )
  table = pd.concat(frames, ignore_index=True)
  table["examples"] = int(pops[names.DENSE].ids.size)
  return table, notes


def published_splits_table(run):
  """The published test sets other than ImageNet-A (CIFAR-10.1): accuracy per variant and split.

  Returns:
    (DataFrame columns `variant`, `split`, `top1`, `top5` (NaN with <= 5 classes),
    `top1_change` (points vs dense), `top1_norm` (%, docs/spec.md §3.6), `clean_top1` (the same
    members on the eval split), `members`, `examples`, or None without such a split; list of notes).
  """
  splits = sorted(
    s for s in protocols.published_splits() if s != IMAGENET_A and s in run.predictions[names.DENSE]
  )
  rows = []
  for split in splits:
    dense = float(
      accuracy.top1_accuracy(
        run.predictions[names.DENSE][split].top1, run.predictions[names.DENSE][split].labels
      ).mean()
    )
    for variant in run.variants:
      pop = run.predictions[variant].get(split)
      if pop is None:
        continue
      top1 = float(accuracy.top1_accuracy(pop.top1, pop.labels).mean())
      top5 = (
        float(accuracy.topk_accuracy(pop.topk, pop.labels, k=TOPK).mean())
        if run.num_classes > TOPK
        else np.nan
      )
      clean = run.predictions[variant].get(run.eval_split)
      common = np.intersect1d(pop.members, clean.members) if clean is not None else []
      clean_top1 = (
        float(accuracy.top1_accuracy(clean.select(common).top1, clean.labels).mean())
        if len(common)
        else np.nan
      )
      rows.append(
        {
          "variant": variant,
          "split": split,
          "top1": top1,
          "top5": top5,
          "top1_change": top1 - dense,
          "top1_norm": float(robustness.normalized_robustness(top1, dense)),
          "clean_top1": clean_top1,
          "members": int(pop.members.size),
          "examples": int(pop.ids.size),
        }
      )
  return (pd.DataFrame(rows) if rows else None), []


def compute(run, imagenet_a_mask=False):
  """The published test sets' tables of a run (none without such splits).

  Returns:
    (tables: name -> DataFrame (`imagenet_a`, `published_splits`), notes, settings dict for
    report.json's `settings["published"]` or None when no table applies).
  """
  tables, notes = {}, []
  table8, n = imagenet_a_table(run, imagenet_a_mask)
  notes += n
  if table8 is not None:
    tables[IMAGENET_A] = table8
  other, n = published_splits_table(run)
  notes += n
  if other is not None:
    tables["published_splits"] = other
  if not tables:
    return {}, notes, None
  protocol = protocols.PROTOCOLS.get(run.dataset_name)
  note = protocol.published.note if protocol and protocol.published else ""
  splits = ([IMAGENET_A] if table8 is not None else []) + (
    sorted(set(other.split)) if other is not None else []
  )
  return (
    tables,
    notes,
    {"splits": splits, "imagenet_a_mask": bool(imagenet_a_mask), "note": note or None},
  )


def section(t8, other, settings):
  """The "published" section's HTML when a published table exists, else `unit.Skip` (left out).

  Args:
    t8: the `imagenet_a` table (000 Table 8), or None.
    other: the `published_splits` table, or None.
    settings: the `published` settings ({} if none).
  """
  if t8 is None and other is None:
    return unit.Skip("no published test set in this run")
  parts = []
  if t8 is not None:
    parts.append(
      "<h3>ImageNet-A (000 Table 8)</h3><p class=\"lead\">7,500 natural adversarial images "
      "(Hendrycks et al.), ImageNet labels. Top-1 / top-5 averaged over members; normalized "
      "= 100·(A_t/A_0 − 1) against dense (docs/spec.md §3.6). classes 1000: the 1000-way argmax "
      "(the default: 000's dense top-1 of 0.89% suggests no masking); classes 200: the argmax "
      "over ImageNet-A's 200 classes only (Hendrycks' protocol, from the stored logits).</p>"
      + html.table(
        t8,
        {
          "classes": "int",
          "top1": html.PCT,
          "top5": html.PCT,
          "top1_norm": html.PTS,
          "top5_norm": html.PTS,
          "members": "int",
          "examples": "int",
        },
      )
    )
  if other is not None:
    parts.append(
      "<h3>Published test sets</h3><p class=\"lead\">Accuracy on a published test set of "
      "the same classes (CIFAR-10.1: Recht et al. 2018, 003 Table 11), averaged over "
      "members; top1_change in points and top1_norm = 100·(A_t/A_0 − 1) against dense; "
      "clean_top1: the same members on the clean evaluation split.</p>"
      + html.table(
        other.dropna(axis=1, how="all"),
        {
          "top1": html.PCT,
          "top5": html.PCT,
          "top1_change": html.PCT,
          "top1_norm": html.PTS,
          "clean_top1": html.PCT,
          "members": "int",
          "examples": "int",
        },
      )
    )
  if settings.get("note"):
    parts.append(f"<p class=\"skip\">Note: {html.esc(settings['note'])}.</p>")
  return "".join(parts)
