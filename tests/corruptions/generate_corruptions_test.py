"""The generate_corruptions command (in-process, `tests/command_main.py`): fills the cache for `digits`; bad flags are usage errors."""

from absl import app
from absl.testing import flagsaver
import pytest

from tests import command_main
from tf_forget.commands import generate_corruptions_command
from tf_forget.corruptions import corrupted_split
from tf_forget.data import registry as data_registry

MAIN = command_main.main_of(generate_corruptions_command)


def test_fills_the_cache_for_digits(tmp_path, capsys):
  with flagsaver.flagsaver(
    dataset="digits",
    cache_dir=str(tmp_path),
    corruptions=["fog", "jpeg_compression"],
    severities=["2"],
  ):
    MAIN(["generate_corruptions"])
  assert "generated 2 of 2" in capsys.readouterr().out
  data = data_registry.get("digits")
  split = corrupted_split.CorruptedSplit(data, data.spec.eval_split, "fog", 2, str(tmp_path))
  assert len(split) == data.num_examples(data.spec.eval_split)
  with flagsaver.flagsaver(
    dataset="digits", cache_dir=str(tmp_path), corruptions=["fog"], severities=["2"]
  ):
    MAIN(["generate_corruptions"])
  assert "generated 0 of 1" in capsys.readouterr().out


@pytest.mark.parametrize(
  "flags, argv",
  [
    (dict(dataset="digits"), []),
    (dict(dataset="digits", cache_dir="/tmp/x", corruptions=["nope"]), []),
    (dict(dataset="digits", cache_dir="/tmp/x", severities=["0"]), []),
    (dict(dataset="nope", cache_dir="/tmp/x", corruptions=["fog"], severities=["1"]), []),
  ],
)
def test_bad_flags_are_usage_errors(flags, argv):
  with flagsaver.flagsaver(**flags):
    with pytest.raises(app.UsageError):
      MAIN(["generate_corruptions"] + argv)
