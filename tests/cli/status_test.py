"""What an interrupted command says it was doing (`tf_forget.cli.status.describe`)."""

import pytest

from tf_forget.cli import status


@pytest.fixture(autouse=True)
def _fresh():
  status.reset()
  yield
  status.reset()


def test_before_anything():
  assert status.describe() == "start-up"


def test_a_stage_without_section():
  status.begin("toys", 4)
  status.advance(2)
  assert status.describe() == "toys, 2 of 4 units done"


def test_a_section_before_its_first_stage():
  status.section("populations")
  assert status.describe() == "populations"


def test_a_stage_within_a_section_is_named_after_it():
  status.section("populations")
  status.begin("train", 4)
  status.advance()
  assert status.describe() == "populations (train, 1 of 4 units done)"
  status.advance(9)  # never more than the total
  assert status.describe() == "populations (train, 4 of 4 units done)"


def test_a_stage_named_as_its_section():
  status.section("populations")
  status.begin("populations", 1)
  assert status.describe() == "populations, 0 of 1 unit done"
  status.section("report")  # a new section forgets the stage
  assert status.describe() == "report"
