"""tf_forget.cli.app: an interrupt is one line and exit 130 / 143 even when TensorFlow turns it
into another error on its way up (a SIGTERM raised inside a Keras callback can surface as
"RuntimeError: Exiting device scope without proper scope nesting")."""

import signal

from absl.testing import flagsaver
import pytest

from tf_forget.artifacts import errors
from tf_forget.cli import app
from tf_forget.cli import status


def _main_that_turns(signum, into):
  def main(argv):
    del argv
    try:
      app._on_signal(signum, None)
    except KeyboardInterrupt as e:
      raise into from e

  return main


@pytest.mark.parametrize(
  "signum, code, verb", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
@pytest.mark.parametrize(
  "into",
  [
    RuntimeError("Exiting device scope without proper scope nesting"),
    errors.WriteError("cannot write x"),
  ],
)
def test_an_interrupt_surfacing_as_another_error_is_one_line(
  capsys, monkeypatch, signum, code, verb, into
):
  monkeypatch.setattr(app, "_RECEIVED", [])
  status.reset()  # an audit run earlier in this process left its last section
  status.begin("populations", 4)
  status.advance(1)
  with flagsaver.flagsaver(verbose=True):
    main = _main_that_turns(signum, into)
    got = app._status(main, "cmd", ["cmd"])
  assert got == code
  assert capsys.readouterr().err.strip().splitlines() == [
    f"cmd: {verb} during populations, 1 of 4 units done; run the same command to resume"
  ]


def test_a_bug_without_an_interrupt_keeps_its_traceback(capsys, monkeypatch):
  monkeypatch.setattr(app, "_RECEIVED", [])

  def main(argv):
    raise RuntimeError("a bug")

  with flagsaver.flagsaver(verbose=True):
    assert app._status(main, "cmd", ["cmd"]) == 1
  err = capsys.readouterr().err
  assert "Traceback" in err and "RuntimeError: a bug" in err


class _Finalized:
  """Raises the signal handler's exception in `__del__`, where Python prints "Exception ignored"
  and goes on (a SIGTERM landing in a finalizer: the CI run of trust_inputs_test at 1.0 s)."""

  def __init__(self, signum):
    self.signum = signum

  def __del__(self):
    app._on_signal(self.signum, None)


@pytest.mark.parametrize(
  "signum, code, verb", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_an_interrupt_swallowed_by_a_finalizer_still_stops_with_one_line(
  capsys, monkeypatch, signum, code, verb
):
  monkeypatch.setattr(app, "_RECEIVED", [])
  status.reset()

  def main(argv):
    del argv
    finalized = _Finalized(signum)
    del finalized  # the exception is "ignored": main returns as if nothing happened
    return 0

  with flagsaver.flagsaver(verbose=True):
    got = app._status(main, "cmd", ["cmd"])
  assert got == code
  lines = capsys.readouterr().err.strip().splitlines()
  assert lines[-1].startswith(f"cmd: {verb} during ") and lines[-1].endswith(
    "run the same command to resume"
  )
