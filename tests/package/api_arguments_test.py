"""The Python face refuses an argument of the wrong type in one line before anything is read
or written: `tf_forget.audit(out=5)` would otherwise write a run into `./5`.

Each keyword is an audit flag and takes that flag's kind (`tf_forget.commands.option_types`);
`config` is None, an `AuditConfig`, its JSON dict or a file's path; an `AuditConfig` built in
Python is held to its fields' types (`tf_forget.api.audit`); a run directory is a str or an
`os.PathLike`. Every call runs in an empty working directory, which must stay empty.
"""

import os
import pathlib

import pytest

import tf_forget
from tf_forget import api
from tf_forget.config import codec

TINY = dict(
  preset="tiny",
  members=2,
  variants=["dense"],
  quantizations=["float32"],
  corruptions=["none"],
  noise_levels=["none"],
  executor="inline",
)


@pytest.fixture
def here(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  return tmp_path


@pytest.mark.parametrize(
  "options, message",
  [
    (dict(out=5), "out must be a str or an os.PathLike, got int 5"),
    (dict(out="run", members="2"), "members must be an int, got str '2'"),
    (dict(out="run", members=2.0), "members must be an int, got float 2.0"),
    (dict(out="run", max_kl=True), "max_kl must be a number, got bool True"),
    (dict(out="run", deploy_all_members=1), "deploy_all_members must be True or False, got int 1"),
    (
      dict(out="run", sparsities=[0.5, None]),
      "sparsities must be a list of str, os.PathLike or numbers, or a comma-separated str, got "
      "list [0.5, None]",
    ),
    (
      dict(out="run", candidate={"int8": 8}),
      "candidate must be a dict {NAME: path or [paths]} or a list of 'NAME=PATHS', got dict "
      "{'int8': 8}",
    ),
  ],
)
def test_a_keyword_of_the_wrong_type_is_refused_before_anything_is_written(here, options, message):
  with pytest.raises(TypeError) as info:
    tf_forget.audit(**dict(TINY, **options), log=lambda line: None)
  assert str(info.value) == message
  assert os.listdir(here) == []


def test_a_config_of_the_wrong_type_is_refused(here):
  with pytest.raises(
    TypeError,
    match="config must be None, an AuditConfig, its JSON dict or a "
    "configuration file's path, got int 5",
  ):
    tf_forget.audit(5)
  with pytest.raises(TypeError, match="config must be an AuditConfig or its JSON dict, got int 5"):
    api.audit(5)
  with pytest.raises(codec.ConfigError, match="^out must be str, got 5$"):
    api.audit(api.AuditConfig(out=5), log=lambda line: None)
  with pytest.raises(TypeError, match="log must be callable, got int"):
    api.audit(api.AuditConfig(out="run"), log=5)
  for call in (api.load_report, tf_forget.render_report):
    with pytest.raises(TypeError, match="run_dir must be a str or an os.PathLike, got int 5"):
      call(5)
  assert os.listdir(here) == []


def test_paths_may_be_path_objects(here):
  text = tf_forget.plan(out=pathlib.Path("run"), sparsities=(0.5,), members=2)
  assert text.startswith("audit plan: digits")
  assert api.plan(api.AuditConfig(out=pathlib.Path("run"))).startswith("audit plan: digits")
  assert os.listdir(here) == []
