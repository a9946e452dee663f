"""The audited data and files in words, for the page's title and header.

`source_words`, `title`, `rows`: what was audited, on which data (`folder images/`,
`calibration: folder calib/`), never a Python dict.

Standard library only.
"""

import posixpath

# Keys of a data set's options that are bookkeeping, not something a reader chose.
HIDDEN_OPTIONS = ("content",)


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


def rows(dataset_name, dataset_options, eval_split, examples, user=None):
  """The page header's (label, value) rows: what was audited, on which data, in words."""
  data = source_words(dataset_name, dataset_options)
  where = dict(dataset_options or {}).get("path")
  rows = user_rows(user)
  rows.append(("data set", f"{data} ({where})" if where and dataset_name == "folder" else data))
  rows += option_rows(dataset_name, dataset_options)
  rows.append(("evaluation split", f"{eval_split} ({examples:,} examples)"))
  return rows
