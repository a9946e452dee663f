"""The Python types `tf_forget.audit(**options)` takes for each of the audit's flags.

A keyword is read as its flag (`tf_forget.commands.audit_options.options_config`), so a value is
first turned into the flag's text; `check` refuses, before anything is read or written, a value
whose text would mean something else than the caller wrote (`out=5` would be a run directory
named "5", `members=2.5` a parse error, `sparsities=True` the word "True"):

  * a string or enum flag: a `str` or an `os.PathLike` (`pathlib.Path`);
  * an integer flag: an `int`; a float flag: an `int` or a `float`; a bool flag: `True` /
    `False` (never a number or a string);
  * a list flag: a list or tuple of those strings, paths or numbers, or one comma-separated
    `str`;
  * `candidate` (repeatable): {NAME: path or [paths]}, or a list of "NAME=PATHS" strings.
"""

import os

from absl import flags

_PATH = "a str or an os.PathLike"
_NUMBER = (int, float)


def is_path(value):
  """Whether `value` is a `str` or an `os.PathLike` naming a `str` path."""
  return isinstance(value, str) or (
    isinstance(value, os.PathLike) and isinstance(os.fspath(value), str)
  )


def text(value):
  """`value` as its flag's text (an `os.PathLike` as its path)."""
  return os.fspath(value) if isinstance(value, os.PathLike) else str(value)


def _is_number(value):
  return isinstance(value, _NUMBER) and not isinstance(value, bool)


def _is_candidate(value):
  """`candidate`: {NAME: path or [paths]}, or ["NAME=PATHS", ...]."""
  if isinstance(value, dict):
    return all(
      isinstance(k, str)
      and (is_path(v) or isinstance(v, (list, tuple)) and all(is_path(p) for p in v))
      for k, v in value.items()
    )
  return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)


def _is_list(value):
  return is_path(value) or (
    isinstance(value, (list, tuple)) and all(is_path(v) or _is_number(v) for v in value)
  )


def expected(flag):
  """(what a Python value of the absl `flag` must be, in words; a test of a value)."""
  parser = flag.parser
  if isinstance(flag, flags.MultiFlag):
    return "a dict {NAME: path or [paths]} or a list of 'NAME=PATHS'", _is_candidate
  if isinstance(parser, flags.BooleanParser):
    return "True or False", lambda v: isinstance(v, bool)
  if isinstance(parser, flags.IntegerParser):
    return "an int", lambda v: isinstance(v, int) and not isinstance(v, bool)
  if isinstance(parser, flags.FloatParser):
    return "a number", _is_number
  if isinstance(parser, flags.BaseListParser):
    return "a list of str, os.PathLike or numbers, or a comma-separated str", _is_list
  return _PATH, is_path


def check(options, flag_values):
  """Raises TypeError naming the first keyword of `options` whose value is not of its flag's
  kind ("out must be a str or an os.PathLike, got int 5"); None values are skipped.

  Args:
    options: {flag name: Python value}; every name a flag of `flag_values`.
    flag_values: the absl `FlagValues` defining the flags.
  """
  for name, value in options.items():
    what, ok = expected(flag_values[name])
    if value is not None and not ok(value):
      raise TypeError(
        f"{name} must be {what}, got {type(value).__name__} {' '.join(repr(value).split())[:80]}"
      )
