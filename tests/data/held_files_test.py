"""Tests of `held_files`: bytes held only inside `holding`, within `HELD_BYTES`."""

from tf_forget.data import held_files


def test_nothing_is_held_outside_holding():
  held_files.keep("d1", {"a.png": b"abc"})
  assert not held_files.active()
  assert held_files.get("d1") is None


def test_held_inside_holding_and_gone_after():
  with held_files.holding():
    assert held_files.active()
    held_files.keep("d1", {"a.png": b"abc", "b.png": b"de"})
    assert held_files.get("d1") == {"a.png": b"abc", "b.png": b"de"}
    assert held_files.get("d2") is None and held_files.get(None) is None
    with held_files.holding():  # a nested audit shares what is held
      assert held_files.get("d1") == {"a.png": b"abc", "b.png": b"de"}
    assert held_files.get("d1") is not None
  assert held_files.get("d1") is None and not held_files.active()


def test_a_split_over_the_budget_is_not_held(monkeypatch):
  monkeypatch.setattr(held_files, "HELD_BYTES", 10)
  with held_files.holding():
    held_files.keep("small", {"a": b"123456"})
    held_files.keep("too_big_alone", {"b": b"12345678901"})
    held_files.keep("too_big_beside", {"c": b"12345"})  # 6 + 5 > 10
    held_files.keep("fits_beside", {"d": b"1234"})  # 6 + 4 = 10
    assert held_files.get("small") == {"a": b"123456"}
    assert held_files.get("too_big_alone") is None
    assert held_files.get("too_big_beside") is None
    assert held_files.get("fits_beside") == {"d": b"1234"}
