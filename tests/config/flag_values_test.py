"""The audit binary's flags read into the configuration (`flag_values`).

With a base configuration (`--config`) only the flags given replace its fields; a group of
flags that sets several fields is read whole; a problem is worded with its flag. The binary's
own behaviour (every flag, its defaults, the exit status) is tested through the command:
tests/e2e/audit_config_file_test.py, tests/e2e/audit_faults_test.py.
"""

import pytest

from tf_forget.config import flag_values
from tf_forget.config import tree

NAMES = (
  list(flag_values.FLAG_PATHS)
  + list(flag_values.USER_FLAGS)
  + list(flag_values.STUDY_FLAGS)
  + list(flag_values.VARIANT_FLAGS)
  + ["deploy_all_members", "executor", "workers"]
)
BASE = tree.AuditConfig(
  out="/runs/a", population=tree.Population(members=3, steps=40), noise=tree.Noise(levels=())
)


def _values(**given):
  values = dict.fromkeys(NAMES)
  values.update(
    pruning=["gradual"],
    ratios=["2", "4"],
    algorithms=["mp", "gp"],
    methods=["wt"],
    executor="local",
    input_scaling_check="on",
    candidate=[],
    compress=[],
    trust_model_code=False,
  )  # the binary's defaults of these
  values.update(given)
  return values, set(given)


def test_only_the_flags_given_replace_the_base_fields():
  config = flag_values.config_from_flags(*_values(members=5, out="/runs/b"), base=BASE)
  assert config.population.members == 5 and config.out == "/runs/b"
  assert config.population.steps == 40 and config.noise.levels == ()  # kept from the base
  assert config.execution == BASE.execution  # --executor's default not applied


def test_a_group_of_flags_is_read_whole():
  config = flag_values.config_from_flags(*_values(pruning=["oneshot"], ratios=["2"]), base=BASE)
  assert config.pruning.oneshot.variants == ("oneshot_mp_r2", "oneshot_gp_r2")
  assert config.population.variants == ("dense",)
  config = flag_values.config_from_flags(*_values(workers=0), base=BASE)
  assert config.execution.executor == "inline"


def test_the_users_flags_need_a_reference():
  config = flag_values.config_from_flags(
    *_values(reference=["m.keras"], compress=["full_int8"]), base=BASE
  )
  assert config.user.compress == ("full_int8",) and config.user.references[0].endswith("m.keras")
  with pytest.raises(
    tree.AuditError,
    match="^--candidate, --compress, .* audit your own model: give it with --reference$",
  ):
    flag_values.config_from_flags(*_values(compress=["full_int8"]), base=BASE)
  with pytest.raises(tree.AuditError, match="^--annotation_seed belongs to 000's human study"):
    flag_values.config_from_flags(*_values(annotation_seed=3), base=BASE)


@pytest.mark.parametrize(
  "given, message",
  [
    ({"members": 1}, "--members must be an integer >= 2, got 1"),
    ({"sparsities": ["1.5"]}, "--sparsities must be numbers in (0, 1), got 1.5"),
    ({"pruning": ["twice"]}, "--pruning must be among gradual, oneshot, iterative, both"),
    ({"max_kl": float("nan")}, "--max_kl must be a finite number, got nan"),
    ({"severities": ["x"]}, "--severities must be integers 1-5, got x"),
    ({"image_size": ["8"]}, "--image_size must be two positive integers H,W"),
    ({"reference": ["m.keras"]}, "--members describes a population tf_forget trains"),
  ],
)
def test_a_problem_is_worded_with_its_flag(given, message):
  with pytest.raises(tree.AuditError) as e:
    flag_values.check(flag_values.config_from_flags(*_values(**given), base=BASE))
  assert str(e.value).startswith(message), str(e.value)


def test_a_field_set_by_a_group_of_flags_is_named_by_the_group():
  config = flag_values.config_from_flags(
    *_values(reference=["m.keras"], pruning=["iterative"]), base=tree.AuditConfig(out="/runs/a")
  )
  with pytest.raises(tree.AuditError, match="^--pruning describes a population tf_forget"):
    flag_values.check(config)


def test_every_field_a_flag_sets_is_named_back_by_that_flag():
  for table in (flag_values.FLAG_PATHS, flag_values.USER_FLAGS, flag_values.STUDY_FLAGS):
    for flag, (path, _) in table.items():
      assert flag_values.flag_of(path) == flag, path
  assert flag_values.flag_message("noise.nope", "is odd") == "noise.nope is odd"
