"""The CPU-kernel switch (tf_forget/compat/cpu_kernels.py): defaults, user values, and the
determinism it buys — weights independent of the usable core count, dependent on the thread
setting (which is why it is fixed)."""

import os
import shutil
import subprocess
import sys

from tf_forget.compat import cpu_kernels

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_CONFIGURE = """
import json, os
from tf_forget.compat import cpu_kernels
print(json.dumps(cpu_kernels.configure()))
"""

_TRAIN = """
import hashlib, tempfile
from tf_forget.compat import cpu_kernels, keras2
keras2.enable(); cpu_kernels.configure()
from tf_forget.train import member, member_config, member_files, presets
d = tempfile.mkdtemp()
cfg = member_config.MemberConfig(dataset="digits", model="small_cnn", variant="prune_0.5", k=0,
                          preset=presets.get("tiny"))
meta = member.train_member(cfg, d)
m = member_files.load_model(d)
print(hashlib.sha256(b"".join(w.tobytes() for w in m.get_weights())).hexdigest())
print(meta["machine"]["settings"]["TF_NUM_INTRAOP_THREADS"])
"""


def _env(**values):
  env = {
    k: v
    for k, v in os.environ.items()
    if k not in cpu_kernels.DEFAULTS and k not in cpu_kernels.RECORDED
  }
  env.update(PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2", TF_USE_LEGACY_KERAS="1", **values)
  return env


def _run(code, env, prefix=()):
  out = subprocess.run(
    list(prefix) + [sys.executable, "-c", code],
    env=env,
    check=True,
    capture_output=True,
    text=True,
    timeout=300,
  )
  return out.stdout.strip().splitlines()


def test_defaults_are_set_and_user_values_kept():
  import json

  got = json.loads(_run(_CONFIGURE, _env())[-1])
  assert got["TF_ENABLE_ONEDNN_OPTS"] == "0"
  assert got["TF_NUM_INTRAOP_THREADS"] == "2" and got["TF_NUM_INTEROP_THREADS"] == "1"
  got = json.loads(
    _run(_CONFIGURE, _env(TF_ENABLE_ONEDNN_OPTS="1", TF_NUM_INTRAOP_THREADS="4"))[-1]
  )
  assert got["TF_ENABLE_ONEDNN_OPTS"] == "1" and got["TF_NUM_INTRAOP_THREADS"] == "4"
  # An empty value (what a pass-through of an unset variable may give) counts as unset.
  got = json.loads(_run(_CONFIGURE, _env(TF_ENABLE_ONEDNN_OPTS=""))[-1])
  assert got["TF_ENABLE_ONEDNN_OPTS"] == "0"


def test_configure_after_tensorflow_import_is_refused_when_a_default_is_missing():
  code = (
    "import tensorflow\nfrom tf_forget.compat import cpu_kernels\n"
    "try:\n  cpu_kernels.configure()\nexcept RuntimeError as e:\n  print('refused', e)\n"
  )
  assert _run(code, _env())[-1].startswith("refused TF_ENABLE_ONEDNN_OPTS")


def test_describe_names_the_machine():
  d = cpu_kernels.describe()
  assert set(d) == {"cpu", "machine", "isa", "cores", "settings"}
  assert set(d["isa"]) <= set(cpu_kernels.ISA_FLAGS) and d["cores"] >= 1


def test_weights_do_not_depend_on_cores_but_on_the_thread_setting():
  # Measured with the `tiny` preset (60 steps, 50% pruning): 2 threads on 1 or 2 cores give
  # the same weights; 1 thread gives others (so fixing the count is what makes it portable).
  default = _run(_TRAIN, _env())
  assert default[-1] == "2"
  if shutil.which("taskset"):
    assert _run(_TRAIN, _env(), prefix=("taskset", "-c", "0"))[0] == default[0]
  one_thread = _run(_TRAIN, _env(TF_NUM_INTRAOP_THREADS="1"))
  assert one_thread[-1] == "1"
  assert one_thread[0] != default[0]
