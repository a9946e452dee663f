"""The measures of an audit without labels, per file, from the run's predictions (docs/spec.md §8).

The reference a is the user's model as the dense member 0 runs it (a Keras reference converted
to float32 and nothing else, or the user's float `.tflite` file), each other audited variant's
member 0 is a file b (the user's `.tflite` files and tf_forget's conversions), compared on the
same images, example by example (K = 1). Every statistic is `tf_forget.stats.unlabelled` /
`unlabelled_confidence` (§8.1–8.7); this module reads the predictions and logits, calls them and
lays their results out as the report's tables:

  * `unlabelled_files`: per file, the flip rate and agreement with exact intervals, the class with
    the largest flip rate, the classes whose share changed (BH), Stuart–Maxwell and Bowker, the
    confident flips, KL and the change of the reference class's probability, the verdict of the
    rule (`unlabelled_gates.decides_like`) and of the gates set;
  * `unlabelled_classes`: `per_class_shift` per (file, class);
  * `unlabelled_transitions`: `largest_transitions` of each file;
  * `unlabelled_confidence`: `flips_by_confidence` per (file, bin);
  * `unlabelled_flips`: every flip, most confident first (the gallery shows the first).

Pure numpy / pandas over the artifacts (no TensorFlow).
"""

import numpy as np
import pandas as pd

from tf_forget.artifacts import names
from tf_forget.artifacts import predictions
from tf_forget.artifacts import tflite_json
from tf_forget.policy import unlabelled_gates
from tf_forget.report import collect
from tf_forget.stats import unlabelled
from tf_forget.stats import unlabelled_confidence

CONFIDENT = unlabelled_confidence.CONFIDENT_THRESHOLD
TRANSITIONS = 10  # the largest transitions listed per file
SETTINGS_KEY = "unlabelled"


def _read(run, variant):
  """(top-1 `[N]`, logits `[N, C]` or None) of member 0 of `variant` in dense's row order."""
  pop = run.eval[variant]
  k = int(pop.members[0])
  top1 = pop.top1[0]
  try:
    data = predictions.read(predictions.path(run.run_dir, variant, k, run.eval_split))
  except predictions.PredictionsError as e:
    raise collect.CollectError(str(e)) from e
  if "logits" not in data:
    return top1, None
  rows = collect.row_order(data["ids"], pop.ids, f"{variant}/{k}/{run.eval_split}")
  return top1, data["logits"] if rows is None else data["logits"][rows]


def _size(run, variant):
  """Raw bytes of member 0's file of `variant` (None when its export record is absent)."""
  k = int(run.eval[variant].members[0])
  try:
    _, meta = tflite_json.paths(run.run_dir, names.parse_variant(variant), k)
    return int(tflite_json.read(meta)["size_bytes"]["raw"])
  except Exception:  # a record that cannot be read: the size is unknown, nothing else changes
    return None


def _name(run, c):
  c = int(c)
  return run.class_names[c] if len(run.class_names) == run.num_classes else str(c)


def _worst(run, shift):
  """The class with the largest flip rate among those with `MIN_CLASS_IMAGES` images (ties: the
  lower index), as summary fields (None values without such a class)."""
  n, rate = shift["n"], shift["flip_rate"]
  eligible = np.flatnonzero(n >= unlabelled_gates.MIN_CLASS_IMAGES)
  if not eligible.size:
    return dict.fromkeys(("worst_class", "worst_class_index", "worst_class_flip_rate"))
  c = int(eligible[np.argmax(rate[eligible])])
  return {
    "worst_class": _name(run, c),
    "worst_class_index": c,
    "worst_class_flip_rate": float(rate[c]),
    "worst_class_flips": int(shift["left"][c]),
    "worst_class_n": int(n[c]),
    "worst_class_low": float(shift["low"][c]),
    "worst_class_high": float(shift["high"][c]),
  }


def _moved(run, table, shift, bound):
  """The classes whose decisions moved: flip rate above `bound` (from `MIN_CLASS_IMAGES` images)
  or a significant share change, each with where its decisions went (one phrase each)."""
  out = []
  for c in range(table.shape[0]):
    over = shift["n"][c] >= unlabelled_gates.MIN_CLASS_IMAGES and shift["flip_rate"][c] > bound
    if not (over or shift["significant"][c]):
      continue
    to = [(int(k), int(table[c, k])) for k in np.argsort(-table[c], kind="stable") if k != c]
    went = ", ".join(f"{_name(run, k)} ×{m}" for k, m in to if m)
    out.append(
      f"{_name(run, c)}: {int(shift['left'][c])} of {int(shift['n'][c])} flipped"
      + (f" (to {went})" if went else "")
      + (f", {int(shift['entered'][c])} entered" if shift["entered"][c] else "")
    )
  return out


def _file(run, variant, a, ref_logits, gates, threshold):
  """(summary, {table: frame}) of one file against the reference."""
  b, logits = _read(run, variant)
  c = run.num_classes
  rate = unlabelled.flip_rate(a, b)
  table = unlabelled.class_transitions(a, b, c)
  shift = unlabelled.per_class_shift(table)
  mh = unlabelled.marginal_homogeneity(table)
  s = {
    "design": unlabelled_gates.DESIGN,
    "members": 1,
    "n": rate["n"],
    "flips": rate["flips"],
    "flip_rate": rate["flip_rate"],
    "flip_low": rate["low"],
    "flip_high": rate["high"],
    "agreement": rate["agreement"],
    "agreement_low": rate["agreement_low"],
    "agreement_high": rate["agreement_high"],
    "classes_shifted": int(shift["significant"].sum()),
    "stuart_maxwell_p": mh["stuart_maxwell"]["p_value"],
    "bowker_p": mh["bowker"]["p_value"],
    "confident_threshold": threshold,
    "size_bytes": _size(run, variant),
    **_worst(run, shift),
  }
  frames = {
    "unlabelled_classes": pd.DataFrame(
      {
        "variant": variant,
        "class": np.arange(c),
        "class_name": [_name(run, k) for k in range(c)],
        **{
          k: shift[k]
          for k in ("n", "n_candidate", "left", "entered", "flip_rate", "low", "high")
          + ("share_change", "p_value", "p_adjusted", "significant")
        },
      }
    ),
  }
  moves = unlabelled.largest_transitions(table, TRANSITIONS)
  moves.insert(0, "variant", variant)
  moves.insert(2, "reference_name", [_name(run, k) for k in moves["reference"]])
  moves.insert(4, "candidate_name", [_name(run, k) for k in moves["candidate"]])
  frames["unlabelled_transitions"] = moves
  flips = np.flatnonzero(a != b)
  conf = np.full(a.shape[0], np.nan)
  cand_conf = np.full(a.shape[0], np.nan)
  if ref_logits is not None and logits is not None:
    _, conf = unlabelled_confidence.reference_confidence(ref_logits)
    _, cand_conf = unlabelled_confidence.reference_confidence(logits)
    sure = unlabelled_confidence.confident_flips(ref_logits, b, threshold)
    kl = unlabelled_confidence.kl_summary(ref_logits, logits)["summary"]
    change = unlabelled_confidence.confidence_change(ref_logits, logits)["change_summary"]
    s.update(
      confident_flips=sure["flips"],
      confident_flip_rate=sure["rate"],
      confident_low=sure["low"],
      confident_high=sure["high"],
      confident_images=sure["confident"],
      kl_mean=kl.mean,
      kl_low=max(kl.low, 0.0) if kl.low == kl.low else kl.low,  # KL >= 0
      kl_high=kl.high,
      kl_p99=kl.p99,
      confidence_change_mean=change.mean,
    )
    bins = unlabelled_confidence.flips_by_confidence(ref_logits, b)
    bins = bins.rename_axis("bin").reset_index()
    bins.insert(0, "variant", variant)
    frames["unlabelled_confidence"] = bins
    flips = flips[np.argsort(-conf[flips], kind="stable")]  # most confident first
  frames["unlabelled_flips"] = pd.DataFrame(
    {
      "variant": variant,
      "rank": np.arange(1, flips.size + 1),
      "id": run.eval[names.DENSE].ids[flips],
      "position": flips,
      "reference_prediction": a[flips],
      "reference_name": [_name(run, k) for k in a[flips]],
      "reference_confidence": conf[flips],
      "candidate_prediction": b[flips],
      "candidate_name": [_name(run, k) for k in b[flips]],
      "candidate_confidence": cand_conf[flips],
      "confident": conf[flips] >= threshold,
    }
  )
  s["decides_like"], s["reasons"] = unlabelled_gates.decides_like(s, gates)
  s["gate_passed"], s["gate_reasons"] = unlabelled_gates.verdict(variant, s, gates)
  bound = unlabelled_gates.bounds(gates)["max_class_flip_rate"]
  s["moved_classes"] = _moved(run, table, shift, bound)
  return s, frames


def compute(run, gates, threshold=CONFIDENT):
  """The tables and per-file summaries of an audit without labels.

  Args:
    run: a `collect.Run` of data without labels.
    gates: the `gates_lib.Gates` of the audit.
    threshold: the reference confidence from which a flip is confident (§8.6).

  Returns:
    (tables {name: DataFrame}, summaries {variant: dict}, notes [str]).

  Raises:
    collect.CollectError: predictions that cannot be read or aligned.
  """
  a, ref_logits = _read(run, names.DENSE)
  notes = []
  if ref_logits is None:
    notes.append("the reference's predictions hold no logits: no confidence, KL or confident flips")
  summaries = {
    names.DENSE: {
      "design": unlabelled_gates.DESIGN,
      "members": 1,
      "n": int(a.shape[0]),
      "size_bytes": _size(run, names.DENSE),
    }
  }
  parts = {}
  for variant in sorted(v for v in run.eval if v != names.DENSE):
    s, frames = _file(run, variant, a, ref_logits, gates, threshold)
    summaries[variant] = s
    for name, frame in frames.items():
      parts.setdefault(name, []).append(frame)
  tables = {name: pd.concat(frames, ignore_index=True) for name, frames in parts.items()}
  files = [
    {"variant": v, **{k: x for k, x in s.items() if not isinstance(x, list)}}
    for v, s in summaries.items()
    if v != names.DENSE
  ]
  if files:
    frame = pd.DataFrame(files)
    frame["reasons"] = ["; ".join(summaries[v]["reasons"]) for v in frame["variant"]]
    frame["moved_classes"] = ["; ".join(summaries[v]["moved_classes"]) for v in frame["variant"]]
    tables["unlabelled_files"] = frame
  return tables, summaries, notes


def _pct(value):
  return f"{100 * value:.2f}%" if value == value and value is not None else "n/a"


def is_unlabelled(report):
  """Whether a report.json dict is of an audit without labels (its data's option `labels`)."""
  return ((report.get("dataset") or {}).get("options") or {}).get("labels") == "none"


def summary_lines(report, manifest):
  """The terminal summary of an audit without labels (`summary_terminal.print_summary`): one row per file
  (flips with their exact interval, the class with the largest flip rate, confident flips, KL,
  the verdict of the rule, the shipped size, the gates), then why each failed gate failed."""
  sizes = {e["variant"]: e.get("size_ratio_to_dense_float32") for e in manifest.get("files") or []}
  gated = any(v is not None for v in (manifest.get("gates") or {}).values())
  out = [
    f"\n{'file':<22} {'flips':>6} {'95% CI':>16} {'worst class':>20} {'confident':>9} "
    f"{'KL':>8} {'size':>7}  {'decides like your model':<23}" + (" gate" if gated else "")
  ]
  for v, s in sorted(report["variants"].items(), key=lambda x: (x[0] != names.DENSE, x[0])):
    if v == names.DENSE:
      out.append(f"{v:<22} (your model as the float32 file: the reference)")
      continue
    worst = (
      f"{s['worst_class']}: {_pct(s['worst_class_flip_rate'])}" if s.get("worst_class") else "n/a"
    )
    ratio = sizes.get(v)
    kl = s.get("kl_mean")
    out.append(
      f"{v:<22} {_pct(s['flip_rate']):>6} {_pct(s['flip_low']) + '-' + _pct(s['flip_high']):>16} "
      f"{worst:>20} {_pct(s.get('confident_flip_rate')):>9} "
      f"{'n/a' if kl is None else format(kl, '.2e'):>8} "
      f"{'n/a' if not ratio else format(ratio, '.3f') + 'x':>7}  "
      f"{'yes' if s.get('decides_like') else 'no':<23}"
      + (f" {'pass' if s.get('gate_passed') else 'FAIL'}" if gated else "")
    )
  out.append(
    "(without labels: flips = decisions that differ from your model's on these images, "
    "exact 95% interval; worst class: the largest flip rate of a class your model predicts; "
    "confident: flips where your model's confidence >= 0.9, over all images; size: over the "
    "dense float32 file" + ("; gate: the gates set)" if gated else "; no gate set)")
  )
  for v, s in sorted(report["variants"].items()):
    for reason in s.get("gate_reasons") or []:
      out.append(f"gate failed: {v}: {reason}")
  return out


def recommend(summaries, files):
  """The verdict: the smallest file that decides like the reference on these images (ties: the
  lower flip rate, then the name), else the reference itself.

  Args:
    summaries: {variant: summary} (`compute`).
    files: {variant: how the report names its file}.

  Returns:
    dict `variant`, `file`, `why`, `users` (one line per file), `caveats` (the first screen of
    the verdict, `summary_terminal.first_screen`).
  """
  like = [v for v, s in summaries.items() if v != names.DENSE and s.get("decides_like")]
  size = lambda v: summaries[v].get("size_bytes") or float("inf")  # noqa: E731
  lines = []
  for v, s in sorted(summaries.items()):
    if v == names.DENSE:
      continue
    moved = f"; decisions moved: {'; '.join(s['moved_classes'])}" if s["moved_classes"] else ""
    if s["decides_like"]:
      words = (
        f"decides like your model: flip rate {_pct(s['flip_rate'])} ({s['flips']} of {s['n']})"
      )
    else:
      words = f"decides otherwise: {'; '.join(s['reasons'])}"
    lines.append(f"{files.get(v, v)}: {words}{moved}")
  caveats = [
    "without labels: a flip is a changed decision, not an error; nothing here says which of "
    "the two is right, nor how accurate either is"
  ]
  if not like:
    return {
      "variant": names.DENSE,
      "file": files.get(names.DENSE, names.DENSE),
      "why": "no compressed file decides like your model on these images; keep the reference",
      "users": lines,
      "caveats": caveats,
      "labels": "none",
    }
  best = min(like, key=lambda v: (size(v), summaries[v]["flip_rate"], v))
  s = summaries[best]
  return {
    "variant": best,
    "file": files.get(best, best),
    "why": (
      f"decides like your model on these images (flip rate {100 * s['flip_rate']:.2f}%, "
      f"95% CI {100 * s['flip_low']:.2f}% to {100 * s['flip_high']:.2f}%), the smallest such file"
    ),
    "users": lines,
    "caveats": caveats,
    "labels": "none",
  }
