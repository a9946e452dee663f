"""The export binary: a run end to end, re-run skip, and one-line errors on bad input."""

import os

import pytest

from tests.export import binary_helper
from tests.export import fake_run

BINARY = "tflite_export.export_population"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("run"))
  fake_run.write_member(run_dir, "dense", 0, fake_run.tiny_cnn(0), dataset="digits")
  fake_run.write_member(run_dir, "prune_0.9", 0, fake_run.tiny_cnn(1), dataset="digits")
  return run_dir


def test_exports_and_skips(run_dir):
  args = [f"--run_dir={run_dir}", "--formats=float32,full_int8", "--representative_size=10"]
  first = binary_helper.run_binary(BINARY, *args)
  assert first.returncode == 0, first.stderr[-2000:]
  assert [l.split()[:2] for l in first.stdout.splitlines() if l.startswith("wrote")] == [
    ["wrote", "dense/0:"],
    ["wrote", "full_int8/0:"],
    ["wrote", "prune_0.9/0:"],
  ]
  for path in ("dense/0/float32", "dense/0/full_int8", "prune_0.9/0/float32"):
    assert os.path.exists(os.path.join(run_dir, "tflite", path + ".tflite"))
    assert os.path.exists(os.path.join(run_dir, "tflite", path + ".json"))
  second = binary_helper.run_binary(BINARY, *args)
  assert second.returncode == 0
  assert sum(l.startswith("skip") for l in second.stdout.splitlines()) == 3


@pytest.mark.parametrize(
  "args,message",
  [
    (["stray"], "unexpected arguments: stray"),
    (["--formats=float32,int4"], "unknown TFLite format 'int4'"),
    (["--encodings=plain,gzip"], "unknown encoding 'gzip'"),
    (["--run_dir=/nonexistent/run"], "is not a directory"),
  ],
)
def test_usage_errors(run_dir, args, message):
  if not any(a.startswith("--run_dir") for a in args):
    args = [f"--run_dir={run_dir}", *args]
  result = binary_helper.run_binary(BINARY, *args)
  assert result.returncode != 0
  assert message in result.stderr


def test_unwritable_output_dir(tmp_path):
  run_dir = str(tmp_path)
  fake_run.write_member(run_dir, "dense", 0, fake_run.tiny_cnn(0), dataset="digits")
  with open(os.path.join(run_dir, "tflite"), "w") as f:
    f.write("a file where the output directory should be")
  result = binary_helper.run_binary(BINARY, f"--run_dir={run_dir}", "--formats=float32")
  assert result.returncode == 1
  (line,) = binary_helper.error_lines(result, "export_population: error:")
  assert "cannot write" in line and "Traceback" not in result.stderr
  assert sorted(os.listdir(run_dir)) == ["members", "tflite"]


def test_sparse_twins_with_encodings_flag(tmp_path):
  run_dir = str(tmp_path)
  fake_run.write_member(run_dir, "prune_0.9", 0, fake_run.tiny_cnn(1), dataset="digits")
  result = binary_helper.run_binary(
    BINARY,
    f"--run_dir={run_dir}",
    "--formats=float32",
    "--pruned_formats=float32",
    "--encodings=plain,sparse",
  )
  assert result.returncode == 0, result.stderr[-2000:]
  assert [l.split()[:2] for l in result.stdout.splitlines() if l.startswith("wrote")] == [
    ["wrote", "prune_0.9/0:"],
    ["wrote", "prune_0.9+sparse/0:"],
  ]
  assert sorted(os.listdir(os.path.join(run_dir, "tflite", "prune_0.9", "0"))) == [
    "float32+sparse.json",
    "float32+sparse.tflite",
    "float32.json",
    "float32.tflite",
  ]
