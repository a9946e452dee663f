"""The one spelling of every data source: `--dataset=` values -> registry entries.

    sources.parse("folder:/data/pets")        -> ("folder", {"path": "/data/pets"})
    sources.parse("tfds:mnist")               -> ("tfds", {"tfds_name": "mnist",
                                                           "config": None, "split": None})
    sources.parse("tfds:imagenet_v2/matched-frequency:test[:50%]")
                                              -> ("tfds", {"tfds_name": "imagenet_v2",
                                                           "config": "matched-frequency",
                                                           "split": "test[:50%]"})
    sources.parse("tfrecord:/data/val-*.tfrecord")
                                              -> ("tfrecord", {"pattern": "/data/val-*.tfrecord"})
    sources.parse("celeb_a")                  -> ("celeb_a", {})

The forms follow the formats users already have: Keras
`image_dataset_from_directory` folders, `tfds.load` names (`NAME[/CONFIG][:SPLIT]`; tfds'
own `:VERSION` is not accepted, the part after ":" is the split), `tf.data.TFRecordDataset`
files. Local paths go through `filesystem.user_path` (`~` expanded, made absolute; `gs://` kept)
so that the recorded options rebuild the same data set in another process. `None` options are
unset (`registry.get` drops them: tfds split "test", no config). The tfds name is the option
`tfds_name`, since `name` is `registry.get`'s own first argument. Further options (image_size,
the tfrecord `spec` file, attributes, ...) are the builders' own (`user_sets`).
"""

import re

from tf_forget.artifacts import filesystem
from tf_forget.data import dataset_api
from tf_forget.data import registry

PREFIXES = ("folder", "tfds", "tfrecord")
OWN_FORMS = "folder:PATH, tfds:NAME[:SPLIT], tfrecord:GLOB"  # the user's own data
FORMS = "folder:/path/to/images, tfds:NAME[/CONFIG][:SPLIT], tfrecord:GLOB, or a data set name"
_SLICE = r"\w+(?:\[[^\[\]]*\])?"
_TFDS = re.compile(
  r"(?P<tfds_name>[a-z][a-z0-9_]*)(?:/(?P<config>[\w.\-+]+))?"
  rf"(?::(?P<split>{_SLICE}(?:\+{_SLICE})*))?"
)


def _refuse(spec, problem):
  return dataset_api.DataError(f"data set {spec!r}: {problem}; use {FORMS}")


def parse(spec):
  """(registry name, options) of a data set spelling.

  Args:
    spec: `folder:PATH`, `tfds:NAME[/CONFIG][:SPLIT]`, `tfrecord:GLOB` or a registry name.

  Returns:
    (name, options): `registry.get(name, **options)` builds the data set; options are
    JSON-able.

  Raises:
    dataset_api.DataError: a spelling of none of these forms, or an unknown name (one line).
  """
  if not isinstance(spec, str) or not spec.strip():
    raise _refuse(spec, "empty")
  spec = spec.strip()
  prefix, colon, rest = spec.partition(":")
  if not colon:
    if spec in PREFIXES:
      raise _refuse(spec, f"{spec} needs a location after '{spec}:'")
    if spec not in registry.DATASETS:
      known = ", ".join(n for n in sorted(registry.DATASETS) if n not in PREFIXES)
      raise _refuse(spec, f"no such data set (known: {known})")
    return spec, {}
  if prefix not in PREFIXES:
    raise _refuse(spec, f"unknown source {prefix + ':'!r}")
  if not rest.strip():
    raise _refuse(spec, f"nothing after '{prefix}:'")
  if prefix == "folder":
    return "folder", {"path": filesystem.user_path(rest)}
  if prefix == "tfrecord":
    return "tfrecord", {"pattern": filesystem.user_path(rest)}
  match = _TFDS.fullmatch(rest)
  if not match:
    raise _refuse(
      spec,
      f"{rest!r} is not NAME[/CONFIG][:SPLIT] (a lower-case tfds name, "
      "e.g. tfds:mnist, tfds:cifar10:test, tfds:celeb_a:validation[:50%])",
    )
  return "tfds", match.groupdict()


def parse_own(flag, spec, data_dir=None, what="data"):
  """(registry name, options) of the user's own data given as `--<flag>=<spec>`.

  A `folder:`, `tfds:` or `tfrecord:` source (`parse`), never a registered data set; a tfds
  source reads from `data_dir` when one is given; options that are None are dropped.

  Raises:
    dataset_api.DataError: a spelling `parse` refuses, or a registered data set (one line).
  """
  name, options = parse(spec)
  if name not in PREFIXES:
    raise dataset_api.DataError(f"--{flag}={spec}: give your own {what} ({OWN_FORMS})")
  if data_dir and name == "tfds":
    options["data_dir"] = data_dir
  return name, {k: v for k, v in options.items() if v is not None}
