"""Tests of `collector`: objects frozen for an audit and given back; a worker settled once; a
command's process frozen when it exits."""

import gc
import os
import subprocess
import sys
import types

from tf_forget.executor import collector

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_frozen_freezes_for_the_duration_and_unfreezes():
  assert gc.get_freeze_count() == 0
  with collector.frozen():
    frozen = gc.get_freeze_count()
    assert frozen > 0
    garbage = [object()]
    garbage.append(garbage)  # made during the audit: the collector still walks it
    del garbage
    assert gc.collect() >= 1 and gc.get_freeze_count() == frozen
  assert gc.get_freeze_count() == 0


def test_frozen_leaves_an_existing_freeze_alone(monkeypatch):
  calls = []
  monkeypatch.setattr(collector.gc, "get_freeze_count", lambda: 5)
  monkeypatch.setattr(collector.gc, "freeze", lambda: calls.append("freeze"))
  monkeypatch.setattr(collector.gc, "unfreeze", lambda: calls.append("unfreeze"))
  with collector.frozen():
    pass
  assert calls == []


def test_frozen_unfreezes_when_the_audit_raises():
  try:
    with collector.frozen():
      raise ValueError("stop")
  except ValueError:
    pass
  assert gc.get_freeze_count() == 0


def test_settle_waits_for_tensorflow_then_collects_and_freezes_once(monkeypatch):
  calls = []
  monkeypatch.setattr(collector.gc, "collect", lambda: calls.append("collect"))
  monkeypatch.setattr(collector.gc, "freeze", lambda: calls.append("freeze"))
  monkeypatch.setattr(collector, "_SETTLED", {"done": False})
  monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
  collector.settle()
  assert calls == []  # a worker that has run no TensorFlow task yet
  monkeypatch.setitem(sys.modules, "tensorflow", types.ModuleType("tensorflow"))
  collector.settle()
  collector.settle()
  assert calls == ["collect", "freeze"]  # collected first: no garbage is frozen


def test_a_command_exits_with_everything_frozen():
  # The handler registered first runs last (atexit is LIFO): it sees what the interpreter's
  # final collection will walk.
  code = (
    "import atexit, gc\n"
    "atexit.register(lambda: print('at exit', gc.get_freeze_count() > 0))\n"
    "from tf_forget.executor import collector\n"
    "collector.skip_final_collection()\n"
    "print('before exit', gc.get_freeze_count() > 0)\n"
  )
  out = subprocess.run(
    [sys.executable, "-c", code],
    capture_output=True,
    text=True,
    check=True,
    env=dict(os.environ, PYTHONPATH=ROOT),
  ).stdout
  assert out.split("\n")[:2] == ["before exit False", "at exit True"]
