"""Tests of `decoded_splits`: a split decoded once, within the budget; a decoding started ahead
is waited for, and its error reaches whoever waits."""

import threading

import pytest

from tf_forget.data import decoded_splits


@pytest.fixture(autouse=True)
def _empty(monkeypatch):
  monkeypatch.setattr(decoded_splits, "_kept", {})


def test_decoded_once_then_kept():
  made = []
  make = lambda: made.append(1) or "split"  # noqa: E731
  assert decoded_splits.decode("k", 10, make) == "split"
  assert decoded_splits.decode("k", 10, make) == "split"
  assert made == [1] and decoded_splits.get("k") == "split"
  decoded_splits.forget()
  assert decoded_splits.get("k") is None


def test_over_the_budget_nothing_is_kept_and_the_oldest_make_room(monkeypatch):
  monkeypatch.setattr(decoded_splits, "DECODED_BYTES", 10)
  assert decoded_splits.decode("big", 11, lambda: pytest.fail("decoded")) is None
  decoded_splits.decode("a", 6, lambda: "A")
  decoded_splits.decode("b", 4, lambda: "B")  # 6 + 4 fit
  assert decoded_splits.get("a") == "A" and decoded_splits.get("b") == "B"
  decoded_splits.decode("c", 5, lambda: "C")  # "a" (the oldest) goes; 4 + 5 fit
  assert decoded_splits.get("a") is None
  assert decoded_splits.get("b") == "B" and decoded_splits.get("c") == "C"


def test_a_decoding_started_ahead_is_waited_for_not_repeated():
  release, started = threading.Event(), threading.Event()

  def make():
    started.set()
    assert release.wait(10)
    return "split"

  future = decoded_splits.ahead("k", 10, make)
  assert started.wait(10) and not future.done()
  assert decoded_splits.ahead("k", 10, make) is None  # under way already
  threading.Timer(0.2, release.set).start()
  assert decoded_splits.decode("k", 10, lambda: pytest.fail("decoded twice")) == "split"
  assert future.result(0) == "split" and decoded_splits.get("k") == "split"


def test_the_error_of_a_decoding_ahead_reaches_the_waiter_and_nothing_stays_kept():
  def make():
    raise ValueError("cannot decode image b/3.png")

  future = decoded_splits.ahead("k", 10, make)
  assert isinstance(future.exception(10), ValueError)
  with pytest.raises(ValueError, match="b/3.png"):
    decoded_splits.get("k")
  assert decoded_splits.decode("k", 10, lambda: "again") == "again"  # asked again: decoded


def test_ahead_refuses_a_split_over_the_budget(monkeypatch):
  monkeypatch.setattr(decoded_splits, "DECODED_BYTES", 10)
  assert decoded_splits.ahead("k", 11, lambda: pytest.fail("decoded")) is None
  assert decoded_splits.get("k") is None


def test_forgotten_while_under_way_the_result_is_not_kept():
  release = threading.Event()
  future = decoded_splits.ahead("k", 10, lambda: release.wait(10) and "split")
  decoded_splits.forget()
  release.set()
  assert future.result(10) == "split"
  assert decoded_splits.get("k") is None
