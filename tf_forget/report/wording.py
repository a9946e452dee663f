"""How the report says things in words: rates, class labels, ops, data and files.

Pure formatting, shared by the page, the verdict's sentences and the audit's terminal summary
(`tf_forget/report/summary_terminal.py`):

* `rate`: a fraction as a percentage with enough digits to tell it from a gate's bound (two
  significant digits, more when the bound needs them: 0.07% and 0.15% differ, a flip rate of
  0.0007 is not "0.1%"), and the count behind it when it is small ("0.03% (3 of 10,000)");
* `class_label`: a class once when its name is its index ("3", not "3 (3)");
* `op_label`: an op named so that two ops of a type differ: `CONV_2D #2 (sequential/conv2d_1)`
  (the op's rank among the file's ops of that type, and the layer its output tensor belongs
  to);
* `source_words`, `title`, `header`: the audited data and files in words for the page's title
  and header (`folder images/`, `calibration: folder calib/`), never a Python dict.

Standard library only.
"""

import math
import posixpath
import re

# A rate whose count is at most this is shown with its count ("0.03% (3 of 10,000)").
SMALL_COUNT = 99
# Keys of a data set's options that are bookkeeping, not something a reader chose.
HIDDEN_OPTIONS = ("content",)


def _decimals(percent, significant=2):
  """Decimals that show `percent` with `significant` significant digits (at least 1 for >= 1)."""
  if percent == 0:
    return 0
  magnitude = math.floor(math.log10(abs(percent)))
  return max(1, significant - 1 - magnitude) if abs(percent) < 1 else 1


def rate(fraction, count=None, total=None, bound=None):
  """A fraction as a percentage that can be told apart from `bound` ("n/a" if undefined).

  Args:
    fraction: the rate (0.0007 -> "0.07%"); None or NaN -> "n/a".
    count, total: the count and denominator behind it, appended when the count is small
      (`SMALL_COUNT`): "0.03% (3 of 10,000)".
    bound: a gate's bound (a fraction): digits are added until the shown rate and the shown
      bound differ, whenever the two values differ.

  Returns:
    str.
  """
  if fraction is None or isinstance(fraction, bool) or fraction != fraction:
    return "n/a"
  percent = 100 * float(fraction)
  digits = _decimals(percent)
  if bound is not None and bound == bound and float(bound) != float(fraction):
    b = 100 * float(bound)
    while digits < 8 and round(percent, digits) == round(b, digits):
      digits += 1
  text = f"{percent:.{digits}f}"
  if abs(percent) < 1 and "." in text:  # 0.070 -> 0.07 (the same value: still told apart)
    text = text.rstrip("0").rstrip(".")
  text += "%"
  if count is not None and total and int(count) <= SMALL_COUNT:
    text += f" ({int(count):,} of {int(total):,})"
  return text


def class_label(index, name=None):
  """'3' when the class name is its index (or absent), else 'cat (3)'."""
  index = int(index)
  if name is None or str(name) == str(index):
    return str(index)
  return f"{name} ({index})"


def shown_label(label_name, index):
  """A stored `label_name` ('3 (3)', 'cat (3)') as `class_label` shows it."""
  text, suffix = str(label_name), f" ({int(index)})"
  name = text[: -len(suffix)] if text.endswith(suffix) else text
  return class_label(index, name)


def layer_scope(tensor_name):
  """The layer an op's output tensor belongs to: 'sequential/conv2d_1' of
  'sequential/conv2d_1/Relu;sequential/conv2d_1/BiasAdd;...'; "" for a name without a layer
  path (a graph output such as 'StatefulPartitionedCall:0')."""
  if not tensor_name:
    return ""
  first = str(tensor_name).split(";")[0]
  return first.rsplit("/", 1)[0] if "/" in first else ""


def op_ordinals(rows):
  """{op_index: (rank among the ops of its type, ops of that type)} of a file's analysed ops.

  Args:
    rows: dicts with `op_name` and `op_index` (a layer analysis's `rows`, in any order).
  """
  by_type = {}
  for r in rows:
    if r.get("op_index") is None:
      continue
    by_type.setdefault(r["op_name"], set()).add(int(r["op_index"]))
  out = {}
  for indices in by_type.values():
    for rank, i in enumerate(sorted(indices), start=1):
      out[i] = (rank, len(indices))
  return out


def op_label(op_name, tensor_name=None, ordinal=None):
  """'CONV_2D #2 (sequential/conv2d_1)': the op, its rank among the file's ops of its type
  when there are several (`ordinal` = (rank, count), `op_ordinals`), and its layer."""
  text = str(op_name)
  if ordinal is not None and ordinal[1] > 1:
    text += f" #{ordinal[0]}"
  scope = layer_scope(tensor_name)
  return f"{text} ({scope})" if scope else text


def _folder(path):
  """'images/' of '/data/images' (the folder's own name, as a user calls it)."""
  path = str(path).rstrip("/")
  return (posixpath.basename(path.replace("\\", "/")) or path) + "/"


def source_words(name, options):
  """A data source in words: 'folder images/', 'tfds mnist (test)', 'tfrecord data/*.rec'."""
  options = dict(options or {})
  if name == "folder" and options.get("path"):
    return f"folder {_folder(options['path'])}"
  if name == "tfds" and options.get("tfds_name"):
    config = f"/{options['config']}" if options.get("config") else ""
    split = f" ({options['split']})" if options.get("split") else ""
    return f"tfds {options['tfds_name']}{config}{split}"
  if name == "tfrecord" and options.get("pattern"):
    return f"tfrecord {options['pattern']}"
  return str(name)


def _value(value):
  """An option's value in words: lists joined, nested sources by `source_words`."""
  if isinstance(value, dict) and "name" in value:
    return source_words(value["name"], value.get("options"))
  if isinstance(value, (list, tuple)):
    return ", ".join(str(v) for v in value)
  if isinstance(value, dict):
    return ", ".join(
      f"{k} {_value(v)}" for k, v in sorted(value.items()) if k not in HIDDEN_OPTIONS
    )
  return str(value)


def option_rows(name, options):
  """(label, value) rows of a data set's options in words, e.g. ('calibration', 'folder
  calib/'), ('image size', '8x8, 1 channel'); the data's own path is in `source_words`."""
  options = dict(options or {})
  rows = []
  size, channels = options.pop("image_size", None), options.pop("channels", None)
  if size:
    size = "x".join(str(int(v)) for v in size)
    rows.append(
      (
        "image size",
        size + (f", {channels} channel{'' if channels == 1 else 's'}" if channels else ""),
      )
    )
  if name in ("folder", "tfds", "tfrecord"):  # in `source_words`
    for key in ("path", "tfds_name", "config", "split", "pattern"):
      options.pop(key, None)
  for key in sorted(options):
    value = options[key]
    if key in HIDDEN_OPTIONS or value is None or value == [] or value == {}:
      continue
    rows.append((key.replace("_", " "), _value(value)))
  return rows


def title(dataset_name, dataset_options, references=None):
  """The page title: 'tf_forget audit: model.keras on images/' for a user's model
  (`references`: its paths), 'tf_forget audit: digits' for a registered data set."""
  data = source_words(dataset_name, dataset_options)
  if dataset_name == "folder" and data.startswith("folder "):
    data = data[len("folder ") :]
  if not references:
    return f"tf_forget audit: {data}"
  shown = posixpath.basename(str(references[0]).rstrip("/").replace("\\", "/"))
  more = f" + {len(references) - 1} more" if len(references) > 1 else ""
  return f"tf_forget audit: {shown}{more} on {data}"


def _base(path):
  return posixpath.basename(str(path).rstrip("/").replace("\\", "/")) or str(path)


def user_rows(user):
  """(label, value) rows of what the user brought (the audit config's `user` dict), in words:
  ('your model', 'model.keras'), ('your files', 'int8: int8.tflite'), ('made here', ...)."""
  if not user:
    return []
  refs = list(user.get("references") or [])
  rows = [
    (
      "your model" if len(refs) == 1 else f"your models (K = {len(refs)})",
      ", ".join(_base(r) for r in refs),
    )
  ]
  cands = dict(user.get("candidates") or {})
  if cands:
    rows.append(
      (
        "your files",
        "; ".join(f"{n}: {', '.join(_base(p) for p in paths)}" for n, paths in cands.items()),
      )
    )
  if user.get("compress"):
    rows.append(("made here", ", ".join(user["compress"])))
  return rows


def header(dataset_name, dataset_options, eval_split, examples, user=None):
  """The page header's (label, value) rows: what was audited, on which data, in words."""
  data = source_words(dataset_name, dataset_options)
  where = dict(dataset_options or {}).get("path")
  rows = user_rows(user)
  rows.append(("data set", f"{data} ({where})" if where and dataset_name == "folder" else data))
  rows += option_rows(dataset_name, dataset_options)
  rows.append(("evaluation split", f"{eval_split} ({examples:,} examples)"))
  return rows


def fold(lines):
  """`lines` with repeats folded into one line ending "(xN)", in first-seen order."""
  counts = {}
  for line in lines:
    counts[line] = counts.get(line, 0) + 1
  return [line if n == 1 else f"{line} (x{n})" for line, n in counts.items()]


_WHO = re.compile(r"^(?P<who>[A-Za-z0-9_.~@+-]+): (?P<what>.+)$")


def fold_notes(notes, shown=4):
  """Report notes "<variant>: <text>" that say the same of several variants folded into one
  "<text> (N variants: a, b, ...)", then exact repeats folded (`fold`); first-seen order."""
  groups = {}
  for note in notes:
    m = _WHO.match(note)
    key = m["what"] if m else note
    groups.setdefault(key, []).append(m["who"] if m else None)
  out = []
  for what, who in groups.items():
    named = list(dict.fromkeys(w for w in who if w))
    if len(named) > 1:
      more = f", {len(named) - shown} more" if len(named) > shown else ""
      out.append(f"{what} ({len(named)} variants: {', '.join(named[:shown])}{more})")
    elif named:
      out += [f"{named[0]}: {what}"] * len(who)
    else:
      out += [what] * len(who)
  return fold(out)


def count(x):
  """A count of examples: whole, or one decimal for a mean over members ("n/a": undefined)."""
  if x != x:
    return "n/a"
  return f"{x:.0f}" if abs(x - round(x)) < 1e-6 else f"{x:.1f}"
