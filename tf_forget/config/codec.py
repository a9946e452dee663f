"""JSON for the configuration's frozen dataclasses, driven by their type hints.

`to_json(obj)` writes a dataclass as a dict of JSON values (tuples become lists, nested
dataclasses dicts, mappings dicts); `from_json(cls, doc)` reads it back, checking every value
against its field's type, so that `from_json(type(c), to_json(c)) == c` for every
configuration `c` (tests/config/codec_test.py checks it over generated configurations).

The types a field may have: `str`, `int`, `float`, `bool`, `object` (a JSON value as it is),
`Optional[T]`, `Tuple[T, ...]`, `Tuple[A, B]`, `Mapping[str, T]` and a frozen dataclass. An
`object` value nests at most `MAX_DEPTH` levels of lists and dicts.
"""

import collections.abc
import dataclasses
import math
import typing

from tf_forget.artifacts import errors

MAX_DEPTH = 32  # nesting levels of a free-form JSON value (`object` fields)


class ConfigError(errors.Error):
  """A configuration value of the wrong kind, or a field no configuration has (one line).

  Attributes:
    path: the field's path ("noise.draws"), or None.
    text: what is wrong with it ("must be int, got 'x'").
  """

  def __init__(self, message, path=None, text=None):
    super().__init__(message)
    self.path, self.text = path, text or message


def _fail(path, text):
  return ConfigError(f"{_where(path)} {text}", path=path or None, text=text)


def to_json(obj):
  """The JSON value of a configuration dataclass (or of one of its field values)."""
  if dataclasses.is_dataclass(obj):
    return {f.name: to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
  if isinstance(obj, (tuple, list)):
    return [to_json(v) for v in obj]
  if isinstance(obj, collections.abc.Mapping):
    return {str(k): to_json(v) for k, v in obj.items()}
  return obj


def _where(path):
  return path or "the configuration"


def _scalar(kind, value, path):
  """`value` as `kind` (int, float, str, bool); an int is a float too, a bool is neither."""
  if kind is float and isinstance(value, int) and not isinstance(value, bool):
    value = float(value)
  if kind is not bool and isinstance(value, bool) or not isinstance(value, kind):
    raise _fail(path, f"must be {kind.__name__}, got {value!r}")
  if kind is float and not math.isfinite(value):
    raise _fail(path, f"must be a finite number, got {value!r}")
  return value


def _depth(value):
  """How deeply lists and dicts nest in the JSON value `value` (a scalar: 0), without
  recursion."""
  deepest, todo = 0, [(value, 0)]
  while todo:
    node, level = todo.pop()
    if isinstance(node, dict):
      node = list(node.values())
    if isinstance(node, (list, tuple)):
      deepest = max(deepest, level + 1)
      if deepest > MAX_DEPTH:
        break
      todo.extend((v, level + 1) for v in node)
  return deepest


def read(kind, value, path=""):
  """`value` (a JSON value) as the type `kind`; `path` names it in errors ("data.dataset")."""
  origin, args = typing.get_origin(kind), typing.get_args(kind)
  if kind is object:  # a JSON value as it is, within `MAX_DEPTH` levels
    if _depth(value) > MAX_DEPTH:
      raise _fail(path, f"nests lists or dicts more than {MAX_DEPTH} levels deep")
    return value
  if origin is typing.Union:  # Optional[T]
    if value is None and type(None) in args:
      return None
    (inner,) = [a for a in args if a is not type(None)]
    return read(inner, value, path)
  if dataclasses.is_dataclass(kind):
    return from_json(kind, value, path)
  if origin in (tuple, list, collections.abc.Sequence):
    if not isinstance(value, (list, tuple)):
      raise _fail(path, f"must be a list, got {value!r}")
    if len(args) == 2 and args[1] is Ellipsis or origin is not tuple:
      return tuple(
        read(args[0] if args else object, v, f"{path}[{i}]") for i, v in enumerate(value)
      )
    if len(value) != len(args):
      raise _fail(path, f"must have {len(args)} items, got {value!r}")
    return tuple(read(a, v, f"{path}[{i}]") for i, (a, v) in enumerate(zip(args, value)))
  if origin in (dict, collections.abc.Mapping):
    if not isinstance(value, dict):
      raise _fail(path, f"must be a dict, got {value!r}")
    return {str(k): read(args[1] if args else object, v, f"{path}.{k}") for k, v in value.items()}
  return _scalar(kind, value, path)


def from_json(cls, doc, path=""):
  """The dataclass `cls` from its JSON dict; a missing field takes its default.

  Raises:
    ConfigError: a field `cls` does not have, a value of the wrong type, a missing field
      without a default (one line naming the field's path).
  """
  if not isinstance(doc, dict):
    raise _fail(path, f"must be a dict, got {doc!r}")
  hints = typing.get_type_hints(cls)
  fields = {f.name: f for f in dataclasses.fields(cls)}
  unknown = sorted(set(doc) - set(fields))
  if unknown:
    prefix = f"{path}." if path else ""
    raise ConfigError(
      f"unknown configuration field {prefix}{unknown[0]} (known: "
      f"{', '.join(prefix + name for name in fields)})"
    )
  values = {}
  for name, value in doc.items():
    values[name] = read(hints[name], value, f"{path}.{name}" if path else name)
  try:
    return cls(**values)
  except TypeError as e:  # a required field missing
    raise _fail(path, f"is incomplete: {e}") from e
